// The overview's charts, drawn by the vendored uPlot from the figures the page carries
// (json_script #overview-data). Colours come from the theme's CSS variables, and the
// charts are drawn again when the theme or the width changes. Sizes are set through
// uPlot's options (CSSOM), never a style attribute, so the page's CSP holds.
import uPlot from "./vendor/uplot-1.6.31/uPlot.esm.js";
import { formatCost, formatTicks } from "./lib/ui.js";

const data = JSON.parse(document.getElementById("overview-data").textContent);
const days = data.days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);

const CHARTS = {
  runs: [["Runs", data.runs, "--accent"], ["Errors", data.errors, "--danger"]],
  latency: [["p50 s", data.p50, "--info"], ["p95 s", data.p95, "--warn"]],
  tokens: [["Tokens", data.tokens, "--ok"]],
  cost: [["Cost", data.cost, "--accent"]],
};
// Costs are written as everywhere else ("$0.00012", "0.50 EUR"), on the axis too: a
// day's cost is often a fraction of a cent, which a plain tick wrote as "1.2e-4".
const WRITTEN = data.currency ? { cost: (value) => formatCost(value, data.currency) } : {};

// Runs and tokens are whole numbers: their value axes tick at 1, 2, 5, 10 and so on,
// never at "0.5 runs" (a day or two of few runs would otherwise get one).
const WHOLE = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].flatMap((e) => [1, 2, 5].map((m) => m * 10 ** e));
const COUNTED = new Set(["runs", "tokens"]);

function colour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// Every figure charted is a count, a time or an amount: its axis starts at 0, so a
// narrow band (a day's p50 beside its p95) is not drawn as a cliff.
function fromZero(u, min, max) {
  return max == null ? [0, 1] : uPlot.rangeNum(0, max, 0.1, true);
}

function options(box, series, write = null, whole = false) {
  const axis = { stroke: colour("--muted"), grid: { stroke: colour("--line") }, ticks: { stroke: colour("--line") } };
  const values = write ? (u, ticks) => ticks.map(write) : (u, ticks, index, space, step) => formatTicks(ticks, step);
  return {
    width: box.clientWidth,
    height: box.clientHeight - 30,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
    scales: { x: { time: true }, y: { range: fromZero } },
    axes: [{ ...axis }, { ...axis, size: labelWidth, values, ...(whole ? { incrs: WHOLE } : {}) }],
    series: [
      { label: "Day", value: (u, ts) => (ts == null ? "–" : new Date(ts * 1e3).toISOString().slice(0, 10)) },
      ...series.map(([label, , variable], i) => ({
        label,
        stroke: colour(variable),
        fill: series.length === 2 && i === 1 ? undefined : `${colour(variable)}33`,
        width: 2,
        spanGaps: false,
        ...(write ? { value: (u, v) => (v == null ? "--" : write(v)) } : {}),
      })),
    ],
  };
}

// The value axis as wide as its longest label ("$0.000050"), so no label is cut. (Before
// its ticks are known, uPlot asks with none: a first guess, the width it used to have.)
function labelWidth(u, labels, index) {
  const axis = u.axes[index];
  if (!labels) return 64;
  const longest = labels.reduce((a, b) => (String(b).length > a.length ? String(b) : a), "");
  u.ctx.font = axis.font[0];
  const text = u.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
  return Math.ceil(axis.ticks.size + axis.gap + text + 8);
}

let plots = [];

function draw() {
  plots.forEach((plot) => plot.destroy());
  plots = [];
  document.querySelectorAll("[data-chart]").forEach((box) => {
    const series = CHARTS[box.dataset.chart];
    const chart = options(box, series, WRITTEN[box.dataset.chart], COUNTED.has(box.dataset.chart));
    const plot = new uPlot(chart, [days, ...series.map(([, values]) => values)], box);
    box.plot = plot; // for the page's tests: the ticks uPlot chose
    plots.push(plot);
  });
}

let pending = 0;
function redraw() {
  cancelAnimationFrame(pending);
  pending = requestAnimationFrame(draw);
}

draw();
document.body.dataset.ready = "overview";
new ResizeObserver(redraw).observe(document.querySelector(".overview-charts"));
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);
