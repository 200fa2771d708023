// The overview's charts, drawn by the vendored uPlot from the figures the page carries
// (json_script #overview-data). Colours come from the theme's CSS variables, and the
// charts are drawn again when the theme or the width changes. Sizes are set through
// uPlot's options (CSSOM), never a style attribute, so the page's CSP holds.
import uPlot from "./vendor/uplot-1.6.31/uPlot.esm.js";

const data = JSON.parse(document.getElementById("overview-data").textContent);
const days = data.days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);

const CHARTS = {
  runs: [["Runs", data.runs, "--accent"], ["Errors", data.errors, "--danger"]],
  latency: [["p50 s", data.p50, "--info"], ["p95 s", data.p95, "--warn"]],
  tokens: [["Tokens", data.tokens, "--ok"]],
  cost: [[`Cost ${data.currency}`.trim(), data.cost, "--accent"]],
};

function colour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function options(box, series) {
  const axis = { stroke: colour("--muted"), grid: { stroke: colour("--line") }, ticks: { stroke: colour("--line") } };
  return {
    width: box.clientWidth,
    height: box.clientHeight - 30,
    tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
    scales: { x: { time: true } },
    axes: [{ ...axis }, { ...axis, size: 64, values: (u, ticks) => ticks.map(tick) }],
    series: [
      { label: "Day", value: (u, ts) => (ts == null ? "–" : new Date(ts * 1e3).toISOString().slice(0, 10)) },
      ...series.map(([label, , variable], i) => ({
        label,
        stroke: colour(variable),
        fill: series.length === 2 && i === 1 ? undefined : `${colour(variable)}33`,
        width: 2,
        spanGaps: false,
      })),
    ],
  };
}

// Small costs (a fraction of a cent) keep two significant digits instead of rounding to 0.
function tick(value) {
  if (Math.abs(value) >= 1 || value === 0) return value.toLocaleString();
  return Math.abs(value) >= 0.01 ? String(Number(value.toPrecision(2))) : value.toExponential(1);
}

let plots = [];

function draw() {
  plots.forEach((plot) => plot.destroy());
  plots = [];
  document.querySelectorAll("[data-chart]").forEach((box) => {
    const series = CHARTS[box.dataset.chart];
    plots.push(new uPlot(options(box, series), [days, ...series.map(([, values]) => values)], box));
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
