// The settings of a registered tool or hook (spec "settings": {...}), drawn from the
// JSON Schema of its settings model: a checkbox per boolean, an input per number or
// string, a text box (one item a line) per list of strings. Every control carries the
// spec path of its setting, so the server's errors land next to it.

import { h } from "./dom.js";
import { assignIn, checkbox, controlId, field, numberInput, textInput } from "./spec_fields.js";
import { dotted } from "./spec_paths.js";

/** [checkboxes, other fields] for ``ref.settings`` at ``path`` (the ref's own path). */
export function settingsFields(ctx, schema, ref, path) {
  const props = schema?.properties || {};
  const required = new Set(schema?.required || []);
  const settings = ref.settings || {};
  const update = (key, value) => {
    assignIn(ref, "settings", key, value);
    ctx.onEdit();
  };
  const checks = [];
  const inputs = [];
  for (const [key, prop] of Object.entries(props)) {
    const at = [...path, "settings", key];
    const label = prop.title || key;
    if (prop.type === "boolean") {
      const fallback = Boolean(prop.default);
      checks.push(h("div", { dataset: { field: dotted(at) } }, checkbox(controlId(at), label, settings[key] ?? fallback,
        (checked) => update(key, checked === fallback ? undefined : checked))));
      continue;
    }
    inputs.push(field(at, label, control(prop, at, settings[key], (value) => update(key, value)),
      { help: prop.description || null, required: required.has(key) }));
  }
  return [checks, inputs];
}

function control(prop, at, value, onValue) {
  const placeholder = prop.default !== undefined && !Array.isArray(prop.default) ? String(prop.default) : "";
  if (prop.type === "number" || prop.type === "integer") {
    return numberInput(controlId(at), value, onValue, { placeholder });
  }
  if (prop.type === "array") {
    return h("textarea", { id: controlId(at), rows: 2, value: (value || []).join("\n"), placeholder: "one a line",
      spellcheck: "false", oninput: (e) => {
        const items = e.target.value.split("\n").map((line) => line.trim()).filter(Boolean);
        onValue(items.length ? items : undefined);
      } });
  }
  return textInput(controlId(at), value, onValue, { placeholder });
}
