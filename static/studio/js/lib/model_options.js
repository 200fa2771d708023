// The model form's provider options: one labelled input per option the chosen provider
// accepts (described by the server from its options model), built with h() (text
// only, never markup). Options stored earlier that no input stands for are listed
// read-only and kept on save unless the user removes them: dropping a setting unseen
// would change the model's behaviour behind the user's back.

import { h } from "./dom.js";

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const INTEGER = /^[-+]?\d+$/;

export class OptionInputs {
  /** fields: {provider: [field]}; stored: the config's options (for storedProvider). */
  constructor(root, fields, { stored = {}, storedProvider = null } = {}) {
    this.root = root;
    this.fields = fields;
    this.values = {}; // per provider, what its inputs held when another was picked
    this.provider = null;
    const known = new Set((fields[storedProvider] || []).map((field) => field.name));
    this.values[storedProvider] = stored;
    this.others = Object.entries(stored).filter(([name]) => !known.has(name));
  }

  /** Show the inputs of provider (keeping what the previous one's inputs held). */
  show(provider) {
    if (provider === this.provider) return;
    if (this.provider !== null) this.values[this.provider] = this.read().options;
    this.provider = provider;
    const values = this.values[provider] || {};
    const fields = this.fields[provider] || [];
    const main = fields.filter((field) => !field.more).map((field) => input(field, values));
    const more = fields.filter((field) => field.more).map((field) => input(field, values));
    const moreSet = more.some((row) => row.dataset.set === "1");
    const parts = [
      h("div", { class: "grid-3 options-grid" }, main),
      more.length
        ? h("details", { class: "more-options", open: moreSet },
            h("summary", {}, "More options"), h("div", { class: "grid-3 options-grid" }, more))
        : null,
      this.others.length ? otherOptions(this.others) : null,
    ];
    this.root.replaceChildren(...parts.filter(Boolean));
  }

  /** {options, errors}: the options to send, and inputs that cannot be read. */
  read() {
    const options = {};
    const errors = [];
    for (const row of this.root.querySelectorAll("[data-option]")) {
      const field = (this.fields[this.provider] || []).find((f) => f.name === row.dataset.option);
      try {
        const value = readValue(field, row);
        if (value !== undefined) options[field.name] = value;
      } catch (error) {
        errors.push({ path: `options.${field.name}`, detail: error.message });
      }
    }
    for (const row of this.root.querySelectorAll("[data-other-option]")) {
      const [name, value] = this.others[Number(row.dataset.otherOption)];
      if (!row.querySelector("input[type=checkbox]").checked) options[name] = value;
    }
    return { options, errors };
  }
}

function input(field, values) {
  const id = `m-opt-${field.name.replaceAll("_", "-")}`;
  const stored = values[field.name];
  const help = [field.help, field.bounds && `Allowed: ${field.bounds}.`].filter(Boolean).join(" ");
  const row = h("div", { class: `field option ${field.kind}`, dataset: { field: `options.${field.name}`, option: field.name } });
  if (stored !== undefined && stored !== field.default) row.dataset.set = "1";
  if (field.kind === "bool") {
    const box = h("input", { type: "checkbox", id, checked: stored ?? field.default });
    row.append(h("label", { class: "check", for: id }, box, field.label));
  } else {
    row.append(h("label", { for: id }, field.label), control(field, id, stored));
  }
  if (help) row.append(h("p", { class: "help" }, help));
  return row;
}

function control(field, id, stored) {
  const placeholder = field.default === null || field.default === undefined ? "provider's default" : `default ${field.default}`;
  if (field.kind === "choice") {
    const options = [h("option", { value: "" }, "Provider's default")];
    for (const choice of field.choices) options.push(h("option", { value: choice, selected: stored === choice }, choice));
    return h("select", { id }, options);
  }
  if (field.kind === "lines") {
    return h("textarea", { id, rows: 2, spellcheck: "false", value: (stored || []).join("\n"), placeholder: "none" });
  }
  if (field.kind === "json") {
    const value = stored === undefined || stored === null ? "" : JSON.stringify(stored, null, 2);
    return h("textarea", { id, rows: 4, class: "code", spellcheck: "false", value, placeholder: "none" });
  }
  const mode = field.kind === "integer" ? "numeric" : field.kind === "number" ? "decimal" : "text";
  return h("input", { id, inputmode: mode, autocomplete: "off", value: stored ?? "", placeholder });
}

// What an input holds as an option value; undefined leaves the option out (the
// provider's default). Text that is not a number goes as typed, so the server's error
// says what is wrong with it.
function readValue(field, row) {
  const el = row.querySelector("input, select, textarea");
  if (field.kind === "bool") return el.checked === field.default ? undefined : el.checked;
  const text = el.value.trim();
  if (!text) return undefined;
  if (field.kind === "lines") return text.split("\n").map((line) => line.trim()).filter(Boolean);
  if (field.kind === "json") {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`not valid JSON: ${error.message}`);
    }
  }
  if (field.kind === "number") return NUMBER.test(text) ? Number(text) : text;
  if (field.kind === "integer" || field.kind === "text") return INTEGER.test(text) ? Number(text) : text;
  return text;
}

// Options stored earlier that this provider does not take (an older Studio's, or the
// previous provider's): shown as text, sent back unless removed, so the server's
// refusal names each one and nothing disappears without the user's say.
function otherOptions(others) {
  return h("div", { class: "other-options", "data-testid": "other-options" },
    h("p", { class: "label" }, "Other stored options"),
    h("p", { class: "help" }, "Stored earlier, with no input here. They are kept as they are; if Studio refuses one when you save, tick Remove to drop it."),
    h("ul", {}, others.map(([name, value], index) =>
      h("li", { class: "field", dataset: { field: `options.${name}`, otherOption: String(index) } },
        h("code", {}, name), " = ", h("code", {}, JSON.stringify(value)),
        h("label", { class: "check" }, h("input", { type: "checkbox" }), "Remove")))),
  );
}
