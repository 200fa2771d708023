// An eval run's cases as the page shows them: a group per case (its name and how many
// of its repeats passed), a line per repeat with its status, each evaluator's verdict
// (its detail and, for a judge, the prompt it was sent, behind <details>), score, cost,
// latency and a link to the case's session. Results are keyed by case and repeat, so a
// snapshot and the live updates after it merge without duplicates. Everything a model
// or a user wrote is set as text.
import { h } from "./dom.js";
import { formatCost, formatDuration } from "./ui.js";

const DONE = new Set(["passed", "failed", "error", "cancelled"]);

export class EvalResults {
  constructor(container, { sessionUrl, repeats }) {
    this.container = container;
    this.sessionUrl = sessionUrl;
    this.repeats = repeats;
    container.classList.add(repeats > 1 ? "repeated" : "single");
    this.results = new Map(); // "case:repeat" -> result
    this.groups = new Map(); // case_index -> element
  }

  /** Add or replace results; returns whether any changed. */
  merge(results) {
    let changed = false;
    for (const result of results) {
      const key = `${result.case_index}:${result.repeat}`;
      const before = this.results.get(key);
      if (before && JSON.stringify(before) === JSON.stringify(result)) continue;
      this.results.set(key, result);
      this._draw(result.case_index);
      changed = true;
    }
    return changed;
  }

  ofCase(index) {
    return [...this.results.values()].filter((r) => r.case_index === index).sort((a, b) => a.repeat - b.repeat);
  }

  _draw(index) {
    const results = this.ofCase(index);
    const finished = results.filter((r) => DONE.has(r.status) && r.status !== "cancelled");
    const passed = finished.filter((r) => r.status === "passed").length;
    const rate = finished.length ? `${passed}/${finished.length} passed` : "";
    // One repeat: the case's name heads its one line; several: a heading over their lines.
    const name = h("span", { class: "case-title", dataset: { testid: "case-name" } }, results[0].case_name);
    const group = h("section", { class: "case-group", dataset: { case: String(index), testid: "case" } },
      this.repeats > 1 ? h("h3", { class: "case-name" }, name, rate ? h("span", { class: "case-rate muted", dataset: { testid: "case-rate" } }, rate) : null) : null,
      results.map((result) => this._line(result, this.repeats > 1 ? `#${result.repeat + 1}` : name)));
    const old = this.groups.get(index);
    if (old) old.replaceWith(group);
    else this._insert(index, group);
    this.groups.set(index, group);
  }

  _insert(index, group) {
    const after = [...this.groups.keys()].filter((i) => i > index).sort((a, b) => a - b)[0];
    if (after === undefined) this.container.append(group);
    else this.groups.get(after).before(group);
  }

  _line(result, head) {
    return h("div", { class: "case-line", dataset: { repeat: String(result.repeat), status: result.status, testid: "case-line" } },
      h("span", { class: "repeat" }, head),
      h("span", { class: "status" }, h("span", { class: `badge ${badgeClass(result.status)}`, dataset: { testid: "case-status" } }, result.status)),
      h("div", { class: "verdicts" }, result.verdicts.map(verdict),
        result.error_message ? h("p", { class: "case-error" }, result.error_message) : null),
      h("span", { class: "num score", dataset: { label: "Score" } }, result.score === null ? "—" : result.score.toFixed(2)),
      h("span", { class: "num cost", dataset: { label: "Cost" } }, formatCost(result.cost) || "—"),
      h("span", { class: "num latency", dataset: { label: "Latency" } }, result.latency_s === null ? "—" : formatDuration(result.latency_s * 1000)),
      h("span", { class: "session" }, result.session
        ? h("a", { href: `${this.sessionUrl}${encodeURIComponent(result.session)}/`, dataset: { testid: "case-session" } }, "Session")
        : h("span", { class: "muted" }, "—")));
  }
}

export function percent(value) {
  return value === null ? "—" : `${Math.round(value * 100)}%`;
}

function badgeClass(status) {
  return { passed: "succeeded", failed: "failed", error: "error", cancelled: "cancelled", running: "running", pending: "queued" }[status] || "";
}

function verdict(v) {
  const label = v.evaluator;
  const summary = h("summary", {}, h("span", { class: "verdict-name" }, label), " ", h("span", { class: "verdict-status" }, v.status));
  const body = [];
  if (v.detail) body.push(h("p", { class: "verdict-detail" }, v.detail));
  // A judge's score says more than its pass; the others' 1 or 0 only repeat it.
  if (v.detail && v.score !== null && v.score !== undefined && v.score > 0 && v.score < 1) body.push(h("p", { class: "muted" }, `score ${v.score.toFixed(2)}`));
  if (v.prompt) body.push(h("details", { class: "judge-prompt" }, h("summary", {}, "The judge's prompt"), h("pre", {}, v.prompt)));
  if (!body.length) return h("span", { class: `verdict ${v.status}`, dataset: { testid: "verdict" } }, summary.textContent);
  return h("details", { class: `verdict ${v.status}`, dataset: { testid: "verdict" } }, summary, h("div", { class: "verdict-body" }, body));
}
