// An agent's version history in the builder: the list (newest first), a diff between
// any two versions, and restore (handed back to the page, which saves it).

import { api } from "./api.js";
import { h, pretty } from "./dom.js";
import { renderDiff } from "./diff.js";
import { formatTime } from "./ui.js";

export class Versions {
  constructor(els) {
    this.els = els;
    this.versions = [];
    this.current = null;
    els.compare.addEventListener("click", () => this.compare(Number(els.from.value), Number(els.to.value)));
  }

  async load(url, current) {
    this.current = current;
    this.versions = [];
    let next = url;
    try {
      // Newest first; a few pages at most for any agent a person edits by hand.
      for (let pages = 0; next && pages < 10; pages++) {
        const page = await api(next);
        this.versions.push(...page.results);
        next = page.next;
      }
    } catch (error) {
      this.els.empty.textContent = error.message;
    }
    this.render();
  }

  render() {
    const { list, empty, from, to } = this.els;
    empty.hidden = this.versions.length > 0;
    list.replaceChildren(...this.versions.map((v) => this.item(v)));
    const options = (selectedNumber) => this.versions.map((v) => h("option", { value: v.number, selected: v.number === selectedNumber }, `v${v.number}${v.note ? ` · ${v.note}` : ""}`));
    from.replaceChildren(...options(this.versions[1]?.number ?? this.versions[0]?.number));
    to.replaceChildren(...options(this.versions[0]?.number));
    this.els.compare.disabled = this.versions.length < 2;
  }

  item(version) {
    const isCurrent = version.number === this.current;
    return h("li", { dataset: { version: version.number } },
      h("span", { class: isCurrent ? "badge accent" : "badge" }, `v${version.number}`),
      h("span", { class: "faint nowrap", title: version.created_at }, `${new Date(version.created_at).toISOString().slice(0, 10)} ${formatTime(version.created_at)}`),
      h("span", { class: "note", title: version.note }, isCurrent ? `${version.note || "—"} (current)` : version.note || "—"),
      h("span", { class: "row" },
        isCurrent ? null : h("button", { type: "button", class: "btn small", onclick: () => this.compare(version.number, this.current) }, "Diff"),
        isCurrent ? null : h("button", { type: "button", class: "btn small", onclick: () => this.els.onRestore(version) }, "Restore")));
  }

  compare(fromNumber, toNumber) {
    const a = this.versions.find((v) => v.number === fromNumber);
    const b = this.versions.find((v) => v.number === toNumber);
    if (!a || !b) return;
    this.els.dialogTitle.textContent = `Version ${a.number} → version ${b.number}`;
    this.els.dialogBody.replaceChildren(renderDiff(pretty(a.spec), pretty(b.spec)));
    this.els.dialog.showModal();
  }
}
