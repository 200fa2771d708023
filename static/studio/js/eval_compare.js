// The compare page's charts: pass rate, cost and latency of every eval of the agent on
// the dataset over time (json_script #eval-history), each point an eval, its agent
// version in the legend. Drawn by the vendored uPlot as the overview draws its charts:
// colours from the theme, drawn again when the theme or the width changes.
import uPlot from "./vendor/uplot-1.6.31/uPlot.esm.js";
import { formatTicks } from "./lib/ui.js";

const data = JSON.parse(document.getElementById("eval-history").textContent);
const points = data.points;
// One step per eval, oldest first: evals are days or minutes apart, and a version's
// story reads better evenly spaced than on a time axis squashed around one point.
const steps = points.map((p, i) => i);

const CHARTS = {
  pass_rate: ["Pass rate %", points.map((p) => p.pass_rate), "--ok"],
  cost: ["Cost $", points.map((p) => p.cost), "--accent"],
  p50: ["p50 s", points.map((p) => p.p50), "--info"],
};

function colour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function when(i) {
  const p = points[i];
  return p ? `v${p.version} · ${new Date(p.at * 1e3).toISOString().slice(0, 16).replace("T", " ")}` : "–";
}

function options(box, [label, , variable], kind) {
  const axis = { stroke: colour("--muted"), grid: { stroke: colour("--line") }, ticks: { stroke: colour("--line") } };
  return {
    width: box.clientWidth,
    height: box.clientHeight - 30,
    scales: {
      x: { time: false, range: () => [-0.5, Math.max(0.5, points.length - 0.5)] },
      y: kind === "pass_rate" ? { range: [0, 100] } : { range: (u, min, max) => [0, Math.max(max * 1.15, 1e-6)] },
    },
    axes: [
      { ...axis, incrs: [1], values: (u, ticks) => ticks.map((i) => (points[i] ? `v${points[i].version}` : "")) },
      { ...axis, size: 56, values: (u, ticks, index, space, step) => formatTicks(ticks, step) },
    ],
    series: [
      { label: "Eval", value: (u, ts, s, i) => (i == null ? "–" : when(i)) },
      { label, stroke: colour(variable), fill: `${colour(variable)}22`, width: 2, points: { show: true, size: 7 } },
    ],
  };
}

function known(values) {
  return values.some((value) => value !== null && value !== undefined);
}

let plots = [];

function draw() {
  plots.forEach((plot) => plot.destroy());
  plots = [];
  document.querySelectorAll("[data-chart]").forEach((box) => {
    const chart = CHARTS[box.dataset.chart];
    if (!known(chart[1])) {
      // Nothing known to draw (no model of these evals has a price, say): say so.
      box.replaceChildren(Object.assign(document.createElement("p"), { className: "chart-none muted", textContent: box.dataset.none }));
      return;
    }
    plots.push(new uPlot(options(box, chart, box.dataset.chart), [steps, chart[1]], box));
  });
}

let pending = 0;
function redraw() {
  cancelAnimationFrame(pending);
  pending = requestAnimationFrame(draw);
}

draw();
document.body.dataset.ready = "eval-compare";
new ResizeObserver(redraw).observe(document.querySelector(".eval-charts"));
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);
