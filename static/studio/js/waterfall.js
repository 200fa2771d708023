// The waterfall of a session: each run's spans on a time axis, newest run first. The
// runs come with the page; the spans of the runs shown come from the spans API, and the
// session's websocket then grows them live (lib/spans.js applies each event to the span
// it names), open spans ticking until the event that closes them arrives.

import { api } from "./lib/api.js";
import { h, readJsonScript } from "./lib/dom.js";
import { isActiveRun, SessionSocket, showConnection, WAITING_LABELS } from "./lib/live.js";
import { costText } from "./lib/span_costs.js";
import { spanDetail } from "./lib/span_detail.js";
import { wallTime } from "./lib/span_timing.js";
import { micros, SpanStore } from "./lib/spans.js";
import { formatDuration, formatTime, formatTokens, toast } from "./lib/ui.js";
import { wallTimeBar } from "./lib/wall_time.js";
import { WaterfallChart } from "./lib/waterfall_view.js";

const data = readJsonScript("waterfall-data");
const $ = (id) => document.getElementById(id);
const store = new SpanStore();
const sections = new Map(); // invocation id -> RunSection
const list = $("wf-runs");
const detail = $("wf-detail");
const filters = $("wf-filters");
let skew = 0; // the server's clock ahead of ours, in µs (events are never stamped in the future)
let selection = null; // {section, key}
let waiting = { invocation: null, what: null }; // what the live run waits on, from the status

const now = () => Date.now() * 1000 + skew;

class RunSection {
  /** ``stored``: the run came with the page, so its spans so far are read from the API;
   * a run that began since comes whole through the socket. */
  constructor(run, { stored }) {
    this.run = run;
    this.open = false;
    this.loaded = !stored;
    this.chart = new WaterfallChart({
      label: `Spans of the run: ${run.message || "run"}`,
      clock: now,
      onSelect: (row, chart) => select(this, row, chart),
      onActivate: () => detail.querySelector("button")?.focus(),
    });
    this.chart.setOptions(currentOptions());
    this.title = h("span", { class: "wf-run-title" });
    this.status = h("span", { class: "badge" });
    this.figures = h("span", { class: "wf-figures" });
    this.wall = h("div", { class: "wf-wall" });
    this.toggle = h("button", { type: "button", class: "wf-toggle", "aria-expanded": "false", onclick: () => this.setOpen(!this.open) },
      h("span", { class: "wf-caret", "aria-hidden": "true" }), this.title);
    this.timeline = h("a", { class: "btn small", href: data.urls.timeline }, "Timeline");
    this.only = data.focus ? null : h("a", { class: "btn small ghost", href: `${data.urls.waterfall}?run=${run.id}` }, "Only this run");
    this.body = h("div", { class: "wf-run-body", hidden: true }, h("div", { class: "wf-run-tools" }, this.wall, this.chart.toolbar), this.chart.el);
    this.el = h("section", { class: "wf-run card flush", dataset: { run: run.id || "", invocation: run.invocation_id } },
      h("header", { class: "wf-run-head" }, this.toggle, this.status, this.figures,
        h("span", { class: "wf-run-links" }, this.timeline, this.only)),
      this.body);
    this.refresh();
  }

  async setOpen(open) {
    this.open = open;
    this.toggle.setAttribute("aria-expanded", String(open));
    this.body.hidden = !open;
    if (open && !this.loaded) await this.load();
    if (!open) return;
    this.chart.setSpans(store.spans(this.run.invocation_id));
    this.refresh();
  }

  /** The run's spans as stored so far (a live run's open ones too). */
  async load() {
    this.loaded = true;
    try {
      const body = await api(`${data.urls.runs}${this.run.id}/spans/`);
      store.load(body.spans);
      this.update(body.run);
    } catch (error) {
      this.loaded = false;
      toast(error.message, { error: true });
    }
  }

  update(run) {
    this.run = { ...this.run, ...run };
    if (!isActiveRun(this.run) && this.run.ended_at) {
      const failed = this.run.status !== "succeeded";
      store.finish(this.run.invocation_id, this.run.ended_at, failed ? `${this.run.error_code}: ${this.run.error_message}` : null);
    }
  }

  spans() {
    return store.spans(this.run.invocation_id);
  }

  /** The header: status, figures and the wall-time split; written only when they
   * changed (a live run's, twice a second). */
  refresh() {
    const run = this.run;
    const spans = this.spans();
    const live = isActiveRun(run);
    const waits = live && waiting.invocation === run.invocation_id ? waiting.what : null;
    const status = waits === "approval" ? "waiting" : run.status;
    const end = live ? now() : micros(run.ended_at || run.created_at);
    const tokens = live ? modelTokens(spans) : { input: run.input_tokens, output: run.output_tokens };
    const errors = spans.filter((span) => span.status === "error").length;
    const root = spans.find((span) => !span.parent_span_id);
    this.started ??= formatTime(run.created_at);
    const chips = [
      this.started,
      formatDuration((end - micros(run.created_at)) / 1000),
      `${formatTokens(tokens.input, tokens.output)} tokens`,
      root?.cost ? `cost ${costText(root.cost)}` : null,
      // A run not opened yet has not had its spans read: no count rather than "0 spans".
      this.loaded ? `${spans.length} span${spans.length === 1 ? "" : "s"}` : null,
      // spans, not errors: a call that failed fails the agent it was made in too
      errors ? `${errors} failed span${errors === 1 ? "" : "s"}` : null,
      waits ? WAITING_LABELS[waits] || `waiting for ${waits}` : null,
    ].filter(Boolean);
    const timing = run.timing || (spans.length ? wallTime(run.created_at, run.started_at, end, spans) : null);
    const sig = JSON.stringify([run.message, status, chips, timing, root?.start_seq]);
    if (sig === this.sig) return;
    this.sig = sig;
    this.title.textContent = run.message || "Run";
    this.status.className = `badge ${status}`;
    this.status.textContent = status;
    this.figures.replaceChildren(...chips.map((c) => h("span", { class: / failed spans?$/.test(c) ? "chip error" : "chip" }, c)));
    this.wall.replaceChildren(...[wallTimeBar(timing)].filter(Boolean));
    if (root?.start_seq) this.timeline.href = `${data.urls.timeline}?seq=${root.start_seq}`;
  }
}

function modelTokens(spans) {
  let input = 0;
  let output = 0;
  for (const span of spans) {
    if (span.kind !== "model") continue;
    input += span.input_tokens || 0;
    output += span.output_tokens || 0;
  }
  return { input, output };
}

function sectionFor(run, stored = false) {
  let section = sections.get(run.invocation_id);
  if (section) return section;
  section = new RunSection(run, { stored });
  sections.set(run.invocation_id, section);
  list.prepend(section.el); // the newest run first
  $("wf-empty").hidden = true;
  return section;
}

// Filters, colours and the critical path: the same for every run.

function currentOptions() {
  const kinds = new Set([...filters.querySelectorAll("input[name=kind]:checked")].map((el) => el.value));
  if (kinds.has("human")) kinds.add("wait"); // "Waits": for a person or for a rate limit
  const agent = $("wf-agent").value;
  const errors = $("wf-errors").checked;
  const all = kinds.size === 5 && !agent && !errors;
  const show = all ? null : (span) => kinds.has(span.kind) && (!agent || span.author === agent) && (!errors || span.status === "error");
  return { show, colour: $("wf-colour").value, critical: $("wf-critical").checked };
}

filters.addEventListener("change", () => {
  const options = currentOptions();
  for (const section of sections.values()) section.chart.setOptions(options);
  $("wf-cost-legend").hidden = options.colour !== "cost";
  remember(COLOUR_KEY, options.colour);
});

// How bars are coloured is kept for the next visit (by kind, duration or cost).
const COLOUR_KEY = "studio.waterfall.colour";

function remember(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    // storage refused (private mode, quota): the choice lasts as long as the page
  }
}

function recall(key) {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function restoreColour() {
  const colour = $("wf-colour");
  const stored = recall(COLOUR_KEY);
  if ([...colour.options].some((option) => option.value === stored)) colour.value = stored;
  $("wf-cost-legend").hidden = colour.value !== "cost";
}

restoreColour();

const agents = new Set();

function refreshAgents() {
  let grew = false;
  for (const span of store.byId.values()) {
    if (span.kind === "agent" && !agents.has(span.author)) {
      agents.add(span.author);
      grew = true;
    }
  }
  if (!grew) return;
  const select = $("wf-agent");
  const value = select.value;
  select.replaceChildren(h("option", { value: "" }, "All agents"), ...[...agents].sort().map((name) => h("option", { value: name }, name)));
  select.value = value;
}

// Selection and the detail panel

function select(section, row, chart) {
  for (const other of sections.values()) if (other.chart !== chart && other.chart.selected) other.chart.select(null, { notify: false });
  selection = row ? { section, key: row.key } : null;
  history.replaceState(null, "", row && row.type === "span" ? `#span-${row.key}` : window.location.pathname + window.location.search);
  showDetail();
}

function showDetail() {
  const row = selection && selection.section.chart.rowByKey(selection.key);
  if (!row) {
    detail.replaceChildren(h("p", { class: "muted" }, "Select a span (click it, or use the arrow keys) to see what went in and came out, its tokens, latency and any error."));
    return;
  }
  const chart = selection.section.chart;
  if (row.type === "lane") {
    detail.replaceChildren(laneDetail(row.lane));
    return;
  }
  const span = row.span;
  detail.replaceChildren(spanDetail(span, {
    tree: chart.layout.tree,
    run: selection.section.run,
    now: now(),
    timelineUrl: data.urls.timeline,
    actions: {
      zoom: () => chart.zoomTo(span),
      parent: () => span.parent_span_id && chart.select(span.parent_span_id),
      close: () => chart.select(null),
    },
  }));
}

function laneDetail(lane) {
  const busy = lane.agents.reduce((sum, agent) => sum + ((agent.end ?? now()) - agent.start), 0);
  return h("div", { class: "wf-detail-body" },
    h("p", { class: "wf-detail-kind" }, "Lane"),
    h("h2", {}, lane.name),
    h("dl", { class: "wf-facts" },
      h("dt", {}, "Runs"), h("dd", {}, String(lane.agents.length)),
      h("dt", {}, "Time in its runs"), h("dd", {}, formatDuration(busy / 1000)),
      h("dt", {}, "Came in"), h("dd", {}, { tool: "called as a tool", transfer: "handed over to" }[lane.via] || "as a sub-agent")),
    h("p", { class: "hint" }, "Enter or ← → opens and closes the lane; a closed lane draws its runs on one line."));
}

// Live: what the socket brings, applied once a frame.

let framePending = false;

function schedule() {
  if (framePending) return;
  framePending = true;
  requestAnimationFrame(() => {
    framePending = false;
    const changed = store.takeChanged();
    for (const invocation of changed) {
      const section = sections.get(invocation);
      if (!section) continue;
      if (section.open) section.chart.setSpans(section.spans());
      if (!isActiveRun(section.run)) section.refresh(); // a live one's, on the next tick
    }
    refreshAgents();
    if (selection && changed.has(selection.section.run.invocation_id)) showDetail();
  });
}

function shown(invocationId) {
  return !data.focus || sections.has(invocationId);
}

function onEvent(event) {
  if (!shown(event.invocation_id)) return;
  const ahead = micros(event.created_at) - Date.now() * 1000;
  if (ahead > skew) skew = ahead;
  if (!sections.has(event.invocation_id)) openLive({ invocation_id: event.invocation_id, message: "", status: "running", created_at: event.created_at });
  if (event.type === "user_message") {
    const section = sections.get(event.invocation_id);
    section.run.message ||= (event.parts || []).map((p) => p.text || "").join("");
  }
  store.observe(event);
  schedule();
}

function openLive(run) {
  const section = sectionFor(run);
  if (!section.open) section.setOpen(true);
  return section;
}

function onStatus(frame) {
  const run = frame.run;
  waiting = { invocation: run?.invocation_id ?? null, what: frame.waiting_for };
  if (!run || (data.focus && run.id !== data.focus)) return;
  const section = sections.get(run.invocation_id) || openLive(run);
  section.update(run);
  section.refresh();
  schedule();
}

// Ticking: open spans grow and their clocks run while a run is live.

let ticks = 0;

setInterval(() => {
  ticks += 1;
  for (const section of sections.values()) {
    if (!isActiveRun(section.run)) continue;
    if (ticks % 5 === 0) section.refresh();
    if (section.open) section.chart.requestDraw();
    if (selection?.section === section && ticks % 5 === 0) showDetail();
  }
}, 100);

// Start: the runs the page came with, the spans of those shown, then the socket.

async function start() {
  for (const run of data.runs) sectionFor(run, true);
  $("wf-empty").hidden = data.runs.length > 0;
  const first = data.focus ? sections.get(data.runs[0].invocation_id) : [...sections.values()].pop();
  const target = targetSpan();
  await first?.setOpen(true);
  new SessionSocket(data.session.id, {
    after: data.last_seq,
    onEvent,
    onPartial: (event) => {
      if (!shown(event.invocation_id)) return;
      store.observe(event);
      schedule();
    },
    onStatus,
    onState: (state, why) => showConnection($("conn"), state, why),
    onError: (frame) => toast(frame.detail || frame.code, { error: true }),
  }).start();
  refreshAgents();
  if (target && first) first.chart.select(target);
  else showDetail();
  requestAnimationFrame(() => {
    document.body.dataset.ready = "waterfall"; // in the frame that draws the spans
  });
}

function targetSpan() {
  const match = /^#span-([0-9a-f]+)$/.exec(window.location.hash);
  return match ? match[1] : null;
}

start();
