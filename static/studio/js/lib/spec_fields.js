// The builder form's building blocks. A field is its label, its control and a notes box
// (help, then the server's errors: forms.js puts them there), in that order, so fields
// side by side in a .grid-2/.grid-3 line up row by row (CSS subgrid) whatever the
// length of their labels. Every field carries data-field="<dotted spec path>".

import { h } from "./dom.js";
import { dotted } from "./spec_paths.js";

/** The id of the control for a spec path: f-sub_agents-0-model. */
export function controlId(path) {
  return `f-${path.join("-")}`;
}

export function field(path, label, control, { help = null, required = false } = {}) {
  return h("div", { class: "field", dataset: { field: typeof path === "string" ? path : dotted(path) } },
    h("label", { for: control.id, class: required ? "required" : null }, label), control,
    h("div", { class: "notes" }, help ? h("p", { class: "help" }, help) : null));
}

export function textInput(id, value, onValue, attrs = {}) {
  return h("input", { id, value: value ?? "", autocomplete: "off", spellcheck: "false", ...attrs,
    oninput: (e) => onValue(e.target.value) });
}

export function numberInput(id, value, onValue, attrs = {}) {
  return h("input", { id, type: "number", min: "0", step: "any", value: value ?? "", inputmode: "decimal", ...attrs,
    oninput: (e) => onValue(e.target.value === "" ? "" : Number(e.target.value)) });
}

export function select(id, options, current, onValue) {
  return h("select", { id, onchange: (e) => onValue(e.target.value) },
    options.map(([value, label]) => h("option", { value, selected: current === value }, label)));
}

export function checkbox(id, label, checked, onValue) {
  return h("label", { class: "check", for: id },
    h("input", { type: "checkbox", id, checked, onchange: (e) => onValue(e.target.checked) }), label);
}

/** Set object[key], or leave it out of the spec when the value is empty. */
export function assign(object, key, value) {
  if (value === "" || value === null || value === undefined || value === false) delete object[key];
  else object[key] = value;
}

/** assign() inside object[group] ({limits}, {approval}), dropping the group once empty. */
export function assignIn(object, group, key, value) {
  object[group] ||= {};
  assign(object[group], key, value);
  if (!Object.keys(object[group]).length) delete object[group];
}
