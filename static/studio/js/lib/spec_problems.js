// What the server's live check finds wrong with the agent, and which of it to show: the
// problems at fields the person touched (changed, or left), or all of them once a save
// was tried or when the agent already exists. Untouched ones are only named, quietly
// ("Still to fill in: Name"). The count in the header and the list it opens always show
// the same problems, each at its field (forms.js) and with its spec path.

import { h } from "./dom.js";
import { clearFieldErrors, findField, showFieldErrors } from "./forms.js";
import { nodePathOf, parseDotted, dotted } from "./spec_paths.js";

export class Problems {
  /**
   * @param {{status: Element, text: Element, count: HTMLButtonElement, box: Element,
   *   title: Element, list: Element, form: Element, onGoTo: Function}} parts
   */
  constructor(parts) {
    Object.assign(this, parts);
    this.all = [];
    this.touched = new Set();
    this.everything = false;
    this.open = false;
    this.count.addEventListener("click", () => this.toggle());
  }

  /** API errors: "name", "description" and "note" are the agent's fields; "spec.<path>"
   * is a spot in the spec, which the form names by its spec path. */
  set(apiErrors) {
    this.all = apiErrors.map((e) => {
      const path = e.path || "";
      let field = path;
      let specPath = null;
      if (path === "spec" || path.startsWith("spec.")) specPath = field = path.slice(5);
      else if (path === "name") specPath = "name";
      else if (path === "description" || path === "note") field = `agent.${path}`;
      return { ...e, field, specPath };
    });
    if (!this.visible().length) this.open = false;
  }

  touch(field) {
    this.touched.add(field);
  }

  /** From now on every problem shows: a save was tried, or the agent exists. */
  showEverything() {
    this.everything = true;
  }

  visible() {
    return this.all.filter((e) => this.isTouched(e.field));
  }

  isTouched(field) {
    if (this.everything) return true;
    for (const t of this.touched) {
      if (t === "" || t === field || field.startsWith(`${t}.`) || t.startsWith(`${field}.`)) return true;
    }
    return false;
  }

  /** Dotted paths of the agent nodes that have a problem shown. */
  invalidNodes() {
    return new Set(this.visible().filter((e) => e.specPath !== null).map((e) => dotted(nodePathOf(parseDotted(e.specPath)))));
  }

  openList() {
    this.open = true;
    this.render();
    this.box.scrollIntoView({ block: "nearest" });
    this.list.querySelector("button")?.focus();
  }

  toggle() {
    if (this.open) {
      this.open = false;
      this.render();
    } else this.openList();
  }

  /** The shown problems at their fields, in the list and in the header's count. */
  render({ focus = null } = {}) {
    const shown = this.visible();
    clearFieldErrors(this.form);
    showFieldErrors(this.form, shown.map((e) => ({ path: e.field, detail: e.detail })), { focus: false });
    const label = `${shown.length} problem${shown.length === 1 ? "" : "s"}`;
    this.title.textContent = `${label} to fix before saving:`;
    this.list.replaceChildren(...shown.map((e) => h("li", {},
      h("button", { type: "button", onclick: () => this.onGoTo(e) }, h("code", {}, e.path || "agent"), e.detail))));
    this.box.hidden = !(this.open && shown.length);
    this.count.setAttribute("aria-expanded", String(!this.box.hidden));
    if (focus) findField(this.form, focus.field)?.querySelector("input, select, textarea, button")?.focus();
    if (shown.length) return this.setStatus("bad", label, { count: true });
    const pending = this.all.filter((e) => !this.isTouched(e.field));
    if (pending.length) return this.setStatus("idle", `Still to fill in: ${this.names(pending).join(", ")}`);
    return this.setStatus("ok", "Valid");
  }

  /** The form's label for each problem's field, or its path where the form shows none. */
  names(problems) {
    const names = problems.map((e) => {
      const label = findField(this.form, e.field)?.querySelector("label, .label, legend");
      return label?.textContent.trim() || e.path || "agent";
    });
    return [...new Set(names)];
  }

  /** kind: ok | idle | busy | bad; with count, the text is the button opening the list. */
  setStatus(kind, text, { count = false } = {}) {
    this.status.className = `status-line ${kind}`;
    this.text.textContent = count ? "" : text;
    this.text.hidden = count;
    this.count.textContent = count ? text : "";
    this.count.hidden = !count;
  }
}
