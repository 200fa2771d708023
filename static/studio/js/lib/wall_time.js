// Where an ended run's wall time went (the run's `timing`, studio/timing.py): a bar
// to scale and the same parts in words, so a long run with short steps explains itself.

import { h } from "./dom.js";
import { formatDuration } from "./ui.js";

const PARTS = [
  ["model_ms", "model", "model calls"],
  ["tools_ms", "tools", "tool calls"],
  ["human_ms", "human", "waiting on a person"], // an approval, or a paused run
  ["queued_ms", "queued", "queued"],
  ["overhead_ms", "overhead", "runner overhead"],
];

/** The split of ``timing`` as an element, or null for a run that has none (yet). */
export function wallTimeBar(timing) {
  if (!timing || !(timing.total_ms > 0)) return null;
  const shown = PARTS.filter(([key]) => timing[key] > 0);
  const segment = ([key, kind, label]) => {
    const el = h("span", { class: `seg ${kind}`, title: `${label}: ${formatDuration(timing[key])}` });
    el.style.flexGrow = String(timing[key]); // CSSOM, which the style-src policy allows
    return el;
  };
  const legend = ([key, kind, label]) => h("span", { class: `part ${kind}`, dataset: { part: kind } },
    h("span", { class: "swatch", "aria-hidden": "true" }), `${label} ${formatDuration(timing[key])}`);
  return h("div", { class: "wall-time", dataset: { testid: "wall-time" } },
    h("span", { class: "total" }, `Wall time ${formatDuration(timing.total_ms)}`),
    h("span", { class: "bar", "aria-hidden": "true" }, shown.map(segment)),
    h("span", { class: "legend" }, shown.map(legend)));
}
