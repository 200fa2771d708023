// A line diff (longest common subsequence) rendered with a little context around each
// change, for comparing two versions of a spec.

import { h } from "./dom.js";

const CONTEXT = 3;
const MAX_CELLS = 4_000_000;

/** [{op: " " | "+" | "-", line}] turning a into b. */
export function diffLines(a, b) {
  const n = a.length;
  const m = b.length;
  if (n * m > MAX_CELLS) return [...a.map((line) => ({ op: "-", line })), ...b.map((line) => ({ op: "+", line }))];
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: " ", line: a[i] });
      i += 1;
      j += 1;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
      out.push({ op: "-", line: a[i++] });
    } else {
      out.push({ op: "+", line: b[j++] });
    }
  }
  while (i < n) out.push({ op: "-", line: a[i++] });
  while (j < m) out.push({ op: "+", line: b[j++] });
  return out;
}

/** The diff as a <div class="diff">; unchanged runs are folded to their context. */
export function renderDiff(before, after) {
  const ops = diffLines(before.split("\n"), after.split("\n"));
  const changed = ops.map((o) => o.op !== " ");
  if (!changed.some(Boolean)) return h("p", { class: "hint" }, "These versions have identical specs.");
  const near = (index) => {
    for (let k = Math.max(0, index - CONTEXT); k <= Math.min(ops.length - 1, index + CONTEXT); k++) if (changed[k]) return true;
    return false;
  };
  const rows = [];
  let folded = 0;
  ops.forEach((o, index) => {
    if (o.op === " " && !near(index)) {
      folded += 1;
      return;
    }
    if (folded) rows.push(h("div", { class: "gap" }, `  ⋯ ${folded} unchanged line${folded === 1 ? "" : "s"}`));
    folded = 0;
    const cls = o.op === "+" ? "add" : o.op === "-" ? "del" : "";
    rows.push(h("div", { class: cls }, `${o.op} ${o.line}`));
  });
  if (folded) rows.push(h("div", { class: "gap" }, `  ⋯ ${folded} unchanged line${folded === 1 ? "" : "s"}`));
  return h("div", { class: "diff", role: "region", "aria-label": "Differences" }, rows);
}
