// Showing the API's validation errors ({path, detail}) next to the fields they name.
// A field is found by data-field="<path prefix>"; the error goes in its .notes box if it
// has one, else at its end; what matches no field goes to the form's [data-form-error] box.

import { h } from "./dom.js";

export function clearFieldErrors(root) {
  for (const el of root.querySelectorAll(".field-error[data-generated]")) el.remove();
  for (const el of root.querySelectorAll(".field.invalid")) el.classList.remove("invalid");
  const box = root.querySelector("[data-form-error]");
  if (box) box.hidden = true;
}

export function showFieldErrors(root, errors, { focus = true } = {}) {
  const unplaced = [];
  let first = null;
  for (const error of errors) {
    const field = findField(root, error.path || "");
    if (!field) {
      unplaced.push(error.path ? `${error.path}: ${error.detail}` : error.detail);
      continue;
    }
    field.classList.add("invalid");
    const notes = field.querySelector(":scope > .notes") || field;
    notes.append(h("p", { class: "field-error", role: "alert", dataset: { generated: "1" } }, error.detail));
    first ??= field;
  }
  const box = root.querySelector("[data-form-error]");
  if (box && unplaced.length) {
    box.textContent = unplaced.join(" · ");
    box.hidden = false;
  }
  if (focus) first?.querySelector("input, select, textarea")?.focus();
}

/** The element of the field at path, or of the nearest enclosing path that has one. */
export function findField(root, path) {
  if (!path) return null;
  const parts = path.split(".");
  for (let n = parts.length; n > 0; n--) {
    const key = parts.slice(0, n).join(".");
    const field = root.querySelector(`[data-field="${CSS.escape(key)}"]`);
    if (field) return field;
  }
  return null;
}
