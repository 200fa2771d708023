// Draws one run's waterfall (lib/waterfall_layout.js says what goes where): a label
// column and a time track per row, bars to scale, the time axis, arrows between lanes,
// loop iteration marks and, for a live run, the present moment. Only the rows in view
// exist in the DOM (a run of 10,000 spans draws some forty), positioned through the
// CSSOM (the style-src policy allows no style attributes). Zoom with ctrl/⌘ + wheel or
// + and -, pan by dragging, shift + wheel or shift + arrows; the arrow keys move between
// spans.

import { h } from "./dom.js";
import { costText, costValue } from "./span_costs.js";
import { decisionChip, decisionLine } from "./span_decisions.js";
import { micros } from "./spans.js";
import { formatDuration } from "./ui.js";
import { costHeatOf, heatOf, layoutRun, rowOfSpan } from "./waterfall_layout.js";

export const ROW_H = 26;
const OVERSCAN = 12;
const MIN_WINDOW_US = 100;
const TICK_LABEL_PX = 56; // room for an axis label right of its line ("2:05 min")
const SVG = "http://www.w3.org/2000/svg";
const ICONS = { agent: "◆", model: "✦", tool: "⚙", human: "◷", wait: "◔" };
const VIA = { tool: "called as a tool", transfer: "handed over" };
let charts = 0;

export class WaterfallChart {
  /** clock(): now, in microseconds; onSelect(row | null); onActivate(row). */
  constructor({ label, clock, onSelect, onActivate }) {
    this.id = (charts += 1);
    this.clock = clock;
    this.onSelect = onSelect;
    this.onActivate = onActivate;
    this.spans = [];
    this.layout = null;
    this.stale = true;
    this.view = null; // the time window [from, to] zoomed to; null fits the run
    this.liveEnd = 0;
    this.selected = null;
    this.options = { colour: "kind", critical: true, show: null, collapsed: new Set() };
    this.pool = new Map();
    this.ticks = h("div", { class: "wf-ticks" });
    this.axis = h("div", { class: "wf-axis", "aria-hidden": "true" }, h("div", { class: "wf-axis-label" }, "Agent · step"), this.ticks);
    this.grid = h("div", { class: "wf-grid", "aria-hidden": "true" });
    this.marks = h("div", { class: "wf-marks", "aria-hidden": "true" });
    this.svg = arrowLayer(this.id);
    this.nowLine = h("div", { class: "wf-now", "aria-hidden": "true", hidden: true });
    this.canvas = h("div", { class: "wf-canvas" }, this.grid, this.marks, this.svg, this.nowLine);
    this.el = h("div", { class: "wf-chart crit-on", tabindex: "0", role: "tree", "aria-label": label }, this.axis, this.canvas);
    this.toolbar = h("span", { class: "wf-zoom" },
      h("button", { type: "button", class: "btn small", title: "Zoom out (-)", "aria-label": "Zoom out", onclick: () => this.zoomBy(2) }, "−"),
      h("button", { type: "button", class: "btn small", title: "Zoom in (+)", "aria-label": "Zoom in", onclick: () => this.zoomBy(0.5) }, "+"),
      h("button", { type: "button", class: "btn small", title: "Fit the run (0)", onclick: () => this.fit() }, "Fit"));
    this.listen();
  }

  // Data and options

  setSpans(spans) {
    this.spans = spans;
    this.stale = true;
    this.requestDraw();
  }

  setOptions(options) {
    Object.assign(this.options, options);
    this.el.classList.toggle("crit-on", this.options.critical);
    this.stale = true;
    this.requestDraw();
  }

  toggleLane(key) {
    const collapsed = new Set(this.options.collapsed);
    if (collapsed.has(key)) collapsed.delete(key);
    else collapsed.add(key);
    this.setOptions({ collapsed });
  }

  // Geometry

  requestDraw() {
    if (this.drawPending) return;
    this.drawPending = true;
    requestAnimationFrame(() => {
      this.drawPending = false;
      if (this.el.isConnected) this.draw();
    });
  }

  relayout(now) {
    this.layout = layoutRun(this.spans, { collapsed: this.options.collapsed, show: this.options.show, now });
    this.costliest = costliest(this.spans);
    this.stale = false;
    this.canvas.style.height = `${this.layout.rows.length * ROW_H}px`;
  }

  /** The run's own extent: while spans are open it grows in steps, so bars grow
   * towards a fixed right edge instead of the whole axis moving every tick. */
  domain(now) {
    const { start, end, open } = this.layout;
    if (!open) return [start, Math.max(end, start + MIN_WINDOW_US)];
    const length = Math.max(now, end) - start;
    if (this.liveEnd < start + length || this.liveEnd > start + length * 2) this.liveEnd = start + Math.max(length * 1.25, 1e6);
    return [start, this.liveEnd];
  }

  window(now) {
    const [from, to] = this.domain(now);
    if (!this.view) return [from, to];
    return this.view;
  }

  /** The chart's geometry, read once and on resize (never while drawing, which would
   * make the browser lay the page out again in every frame). */
  measure() {
    const label = parseFloat(getComputedStyle(this.el).getPropertyValue("--wf-label")) || 260;
    this.labelWidth = label;
    this.width = Math.max(40, this.el.clientWidth - label - 16);
    this.viewHeight = this.el.clientHeight;
    this.axisHeight = this.axis.offsetHeight;
    this.scrollTop = this.el.scrollTop;
  }

  // Drawing

  draw(now = this.clock()) {
    if (this.stale || !this.layout) this.relayout(now);
    if (!this.width) this.measure();
    const [from, to] = this.window(now);
    const scale = this.width / Math.max(to - from, 1);
    const x = (us) => (us - from) * scale;
    const rows = this.layout.rows;
    const top = Math.max(0, this.scrollTop - this.axisHeight);
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(rows.length - 1, Math.ceil((top + this.viewHeight) / ROW_H) + OVERSCAN);
    const frame = { now, from, to, x, first, last, total: this.layout.end - this.layout.start };
    const sig = [from, to, this.width, first, last, this.layout.rows.length, this.layout.iterations.length].join("|");
    if (sig !== this.axisSig) { // else the same ticks, grid lines and loop marks as the last frame
      this.axisSig = sig;
      this.drawAxis(frame);
      this.drawMarks(frame);
    }
    this.drawRows(frame);
    this.drawArrows(frame);
    this.drawNow(frame);
  }

  drawAxis({ from, to, first, last }) {
    const ticks = axisTicks(from, to, this.layout.start, this.width);
    this.ticks.replaceChildren(...ticks.map(({ label, left, end }) => {
      const tick = h("span", { class: end ? "wf-tick end" : "wf-tick" }, label);
      tick.style.left = `${left}px`;
      return tick;
    }));
    this.grid.style.top = `${first * ROW_H}px`;
    this.grid.style.height = `${Math.max(0, last - first + 1) * ROW_H}px`;
    this.grid.style.left = `${this.labelWidth}px`;
    this.grid.replaceChildren(...ticks.map(({ left }) => {
      const line = h("span");
      line.style.left = `${left}px`;
      return line;
    }));
  }

  drawRows(frame) {
    const used = new Set();
    for (let i = frame.first; i <= frame.last; i += 1) {
      const row = this.layout.rows[i];
      let el = this.pool.get(row.key);
      if (!el) {
        el = this.rowElement(row);
        this.pool.set(row.key, el);
        this.canvas.append(el);
      }
      used.add(row.key);
      el.style.transform = `translateY(${i * ROW_H}px)`;
      if (el.row !== row) el.row = row;
      if (row.type === "lane") this.placeLane(el, row, frame);
      else this.placeSpan(el, row, frame);
    }
    for (const [key, el] of this.pool) {
      if (used.has(key)) continue;
      el.remove();
      this.pool.delete(key);
    }
    const selected = this.selected && this.pool.get(this.selected);
    if (selected) this.el.setAttribute("aria-activedescendant", selected.id);
    else this.el.removeAttribute("aria-activedescendant");
  }

  rowElement(row) {
    const id = row.type === "lane" ? `wf-${this.id}-lane-${this.laneNumber(row.lane.key)}` : `wf-span-${row.key}`;
    const label = h("div", { class: "wf-label" });
    label.style.paddingLeft = `${0.5 + row.depth * 0.9}rem`;
    const track = h("div", { class: "wf-track" });
    const el = h("div", { class: `wf-row ${row.type === "lane" ? "wf-lane" : "wf-span"}`, id, role: "treeitem", dataset: { key: row.key } }, label, track);
    el.label = label;
    el.track = track;
    el.setAttribute("aria-level", String(row.depth + 1));
    return el;
  }

  laneNumber(key) {
    this.laneNumbers ??= new Map();
    if (!this.laneNumbers.has(key)) this.laneNumbers.set(key, this.laneNumbers.size + 1);
    return this.laneNumbers.get(key);
  }

  placeLane(el, row, { x, now }) {
    const lane = row.lane;
    const collapsed = this.options.collapsed.has(lane.key);
    const sig = `${collapsed}|${lane.agents.length}|${this.selected === row.key}`;
    if (el.sig !== sig) {
      el.sig = sig;
      el.setAttribute("aria-expanded", String(!collapsed));
      el.setAttribute("aria-selected", String(this.selected === row.key));
      el.classList.toggle("selected", this.selected === row.key);
      el.dataset.lane = lane.name;
      const runs = lane.agents.length > 1 ? h("span", { class: "wf-chip" }, `${lane.agents.length} runs`) : null;
      el.label.replaceChildren(...[
        h("span", { class: "wf-caret", "aria-hidden": "true" }, collapsed ? "▸" : "▾"),
        h("span", { class: "wf-lane-name" }, lane.name),
        VIA[lane.via] ? h("span", { class: "wf-chip via" }, VIA[lane.via]) : null,
        runs].filter(Boolean));
      el.bars = lane.agents.map(() => el.track.appendChild(h("span", { class: "wf-lane-bar" })));
      el.track.replaceChildren(...el.bars);
    }
    lane.agents.forEach((agent, i) => {
      const bar = el.bars[i];
      if (!bar) return;
      place(bar, x(agent.start), x(agent.end ?? now), this.width);
      bar.classList.toggle("error", agent.status === "error");
      bar.classList.toggle("crit", this.options.critical && this.layout.critical.has(agent.span_id));
    });
  }

  placeSpan(el, row, { x, now, total }) {
    const span = row.span;
    const critical = this.options.critical && this.layout.critical.has(span.span_id);
    const heat = this.heatClasses(span, total, now);
    const selected = this.selected === row.key;
    const collapsed = row.head ? this.options.collapsed.has(row.lane.key) : null;
    const cost = costText(span.cost);
    const retried = span.attributes.retried_at?.length ?? 0;
    const sig = `${span.status}|${span.end === null}|${critical}|${heat}|${selected}|${span.name}|${collapsed}|${span.cost?.amount}|${cost}|${retried}`;
    if (el.sig !== sig) {
      el.sig = sig;
      this.fillSpan(el, row, { critical, heat, selected, collapsed, cost });
    }
    const end = span.end ?? now;
    const left = place(el.bar, x(span.start), x(end), this.width);
    if (el.ran) {
      const from = micros(span.attributes.ran_from);
      place(el.ran, x(from) - left, x(from + span.attributes.ran_ms * 1000) - left, Infinity);
    }
    el.retries.forEach((mark, i) => { mark.style.left = `${x(micros(span.attributes.retried_at[i])) - left}px`; });
    const took = span.end === null ? `${formatDuration((now - span.start) / 1000)}…` : formatDuration((end - span.start) / 1000);
    const text = this.options.colour === "cost" && el.cost ? `${took} · ${el.cost}` : took;
    if (el.dur.textContent !== text) el.dur.textContent = text;
    placeLabel(el.dur, Math.max(x(span.start), 0), Math.min(x(end), this.width), this.width);
  }

  /** The bar's colour classes: by share of the run's wall time ("heat"), or by cost
   * against the run's costliest span ("cost"); none when coloured by kind. */
  heatClasses(span, total, now) {
    if (this.options.colour === "heat") return span.kind === "agent" ? "" : `heat-${heatOf(span, total, now)}`;
    if (this.options.colour !== "cost") return "";
    return costHeatOf(span.cost, this.costliest);
  }

  fillSpan(el, row, { critical, heat, selected, collapsed, cost }) {
    const span = row.span;
    el.dataset.kind = span.kind;
    el.dataset.status = span.status;
    el.dataset.name = span.name;
    el.classList.toggle("selected", selected);
    el.classList.toggle("crit", critical);
    el.setAttribute("aria-selected", String(selected));
    if (row.head) el.setAttribute("aria-expanded", String(!collapsed));
    const via = row.head && VIA[row.lane.via] ? h("span", { class: "wf-chip via" }, VIA[row.lane.via]) : null;
    el.label.replaceChildren(...[
      row.head ? h("span", { class: "wf-caret", "aria-hidden": "true" }, collapsed ? "▸" : "▾") : null,
      h("span", { class: "wf-icon", "aria-hidden": "true" }, ICONS[span.kind] || "·"),
      h("span", { class: "wf-name" }, span.name),
      via,
      ...chips(span)].filter(Boolean));
    const classes = ["wf-bar", span.kind, span.status];
    if (heat) classes.push(...heat.split(" "));
    if (critical) classes.push("crit");
    if (span.end === null) classes.push("open");
    el.bar = h("span", { class: classes.join(" ") });
    el.ran = span.kind === "tool" && span.attributes.ran_from ? el.bar.appendChild(h("span", { class: "wf-ran" })) : null;
    // a model call's failed attempts, each a mark where it failed (its retry then waited)
    el.retries = (span.attributes.retried_at ?? []).map((_, i) => el.bar.appendChild(
      h("span", { class: "wf-retry", title: `attempt ${i + 1} failed: ${span.attributes.retries?.[i] ?? ""}` })));
    el.dur = h("span", { class: "wf-dur" });
    el.track.replaceChildren(el.bar, el.dur);
    el.cost = cost;
    el.dataset.cost = span.cost?.amount ?? "";
    const decision = decisionLine(span);
    el.title = `${span.kind} ${span.name} (${span.author})${cost ? ` · cost ${cost}` : ""}${decision ? `\n${decision}` : ""}`;
  }

  drawArrows({ x, first, last, now }) {
    const layer = this.svg.layer;
    const lines = [];
    const top = first * ROW_H;
    for (const arrow of this.layout.arrows) {
      const a = rowOfSpan(this.layout, arrow.from);
      const b = rowOfSpan(this.layout, arrow.to);
      if (a === null || b === null || Math.min(a, b) > last || Math.max(a, b) < first) continue;
      const source = this.layout.tree.byId.get(arrow.from);
      const target = this.layout.tree.byId.get(arrow.to);
      const sx = clamp(arrow.kind === "call" ? x(source.start) : x(source.end ?? now), this.width);
      const tx = clamp(x(target.start), this.width);
      const sy = a * ROW_H + ROW_H / 2 - top;
      const ty = b * ROW_H + ROW_H / 2 - top;
      // A call leaves its tool's bar on the left and enters the agent's from the left; a
      // hand-over leaves the end of its call.
      const bend = arrow.kind === "call" ? Math.max(Math.min(sx, tx) - 9, 1) : sx + 8;
      const path = document.createElementNS(SVG, "path");
      path.setAttribute("d", `M${sx},${sy} H${bend} V${ty} H${Math.max(tx - 2, bend + 4)}`);
      path.setAttribute("class", `wf-arrow ${arrow.kind}`);
      path.setAttribute("marker-end", `url(#wf-head-${this.id})`);
      path.dataset.from = arrow.from;
      path.dataset.to = arrow.to;
      lines.push(path);
    }
    layer.replaceChildren(...lines);
    this.svg.style.top = `${top}px`;
    this.svg.style.left = `${this.labelWidth}px`;
    this.svg.setAttribute("width", String(this.width));
    this.svg.setAttribute("height", String(Math.max(1, last - first + 1) * ROW_H));
  }

  /** Loop iterations: a dashed line where each begins, across the rows of the loop's
   * agents, and its number on the axis, on a line of its own under the time labels (a
   * pass that begins at a whole second would write over it). */
  drawMarks({ x, first, last }) {
    const looped = this.layout.iterations.length > 0;
    if (this.axis.classList.contains("looped") !== looped) {
      this.axis.classList.toggle("looped", looped);
      this.axisHeight = this.axis.offsetHeight; // once, when a run's first loop appears
    }
    const marks = [];
    for (const mark of this.layout.iterations) {
      const range = mark.lane.rowRange;
      const at = x(mark.at);
      if (!range || at < 0 || at > this.width) continue;
      const label = h("span", { class: "wf-tick wf-iter-label", title: `${mark.lane.name}: iteration ${mark.n} begins` }, `↻${mark.n}`);
      label.style.left = `${at}px`;
      this.ticks.append(label);
      const from = Math.max(range[0] + 1, first);
      const to = Math.min(range[1], last);
      if (from > to) continue;
      const el = h("span", { class: "wf-iter" });
      el.style.left = `${this.labelWidth + at}px`;
      el.style.top = `${from * ROW_H}px`;
      el.style.height = `${(to - from + 1) * ROW_H}px`;
      marks.push(el);
    }
    this.marks.replaceChildren(...marks);
  }

  drawNow({ x, first, last, now }) {
    const live = this.layout.open;
    this.nowLine.hidden = !live;
    if (!live) return;
    this.nowLine.style.left = `${this.labelWidth + clamp(x(now), this.width)}px`;
    this.nowLine.style.top = `${first * ROW_H}px`;
    this.nowLine.style.height = `${Math.max(1, last - first + 1) * ROW_H}px`;
  }

  // Zoom and pan

  zoomBy(factor, centre = null) {
    const now = this.clock();
    const [from, to] = this.window(now);
    const [lo, hi] = this.domain(now);
    const mid = centre ?? (from + to) / 2;
    const length = Math.min(Math.max((to - from) * factor, MIN_WINDOW_US), hi - lo);
    const start = Math.min(Math.max(mid - (mid - from) * (length / (to - from)), lo), hi - length);
    this.view = length >= hi - lo ? null : [start, start + length];
    this.requestDraw();
  }

  panBy(fraction) {
    const now = this.clock();
    const [from, to] = this.window(now);
    const [lo, hi] = this.domain(now);
    if (!this.view) return;
    const shift = Math.min(Math.max((to - from) * fraction, lo - from), hi - to);
    this.view = [from + shift, to + shift];
    this.requestDraw();
  }

  fit() {
    this.view = null;
    this.requestDraw();
  }

  zoomTo(span) {
    const end = span.end ?? this.clock();
    const pad = Math.max((end - span.start) * 0.15, MIN_WINDOW_US);
    const [lo, hi] = this.domain(this.clock());
    this.view = [Math.max(lo, span.start - pad), Math.min(hi, end + pad)];
    this.requestDraw();
  }

  // Selection

  select(key, { scroll = true, notify = true } = {}) {
    this.selected = key;
    if (key && scroll) this.scrollToKey(key);
    this.requestDraw();
    for (const el of this.pool.values()) el.sig = ""; // redraw the selection mark
    if (notify) this.onSelect?.(key ? this.rowByKey(key) : null, this);
  }

  rowByKey(key) {
    if (this.stale || !this.layout) this.relayout(this.clock());
    const at = this.indexOfKey(key);
    return at === null ? null : this.layout.rows[at];
  }

  indexOfKey(key) {
    if (!this.layout) return null;
    if (key?.startsWith("lane:")) return this.layout.laneRows.get(key.slice(5)) ?? null;
    return rowOfSpan(this.layout, key);
  }

  scrollToKey(key) {
    const at = this.indexOfKey(key);
    if (at === null) return;
    if (!this.width) this.measure();
    const y = at * ROW_H;
    const view = this.viewHeight - this.axisHeight;
    if (y < this.scrollTop) this.el.scrollTop = this.scrollTop = y;
    else if (y + ROW_H > this.scrollTop + view) this.el.scrollTop = this.scrollTop = y + ROW_H - view;
  }

  move(delta) {
    const rows = this.layout?.rows || [];
    if (!rows.length) return;
    const at = this.indexOfKey(this.selected);
    const from = at === null ? (delta > 0 ? -1 : rows.length) : at;
    const next = Math.min(Math.max(from + delta, 0), rows.length - 1);
    this.select(rows[next].key);
  }

  /** ← on a span: its parent (or its lane); on an open lane: close it. */
  out() {
    const row = this.rowByKey(this.selected);
    if (!row) return;
    if (row.type === "lane" || row.head) {
      if (!this.options.collapsed.has(row.lane.key)) this.toggleLane(row.lane.key);
      else if (row.lane.parent) this.select(this.headKey(row.lane.parent));
      return;
    }
    const parent = this.layout.tree.byId.get(row.span.parent_span_id);
    const parentRow = parent ? this.layout.index.get(parent.span_id) : undefined;
    this.select(parentRow !== undefined && this.layout.laneOf.get(parent.span_id) === row.lane ? parent.span_id : this.headKey(row.lane));
  }

  /** The key of the row that heads ``lane``. */
  headKey(lane) {
    const at = this.layout.laneRows.get(lane.key);
    return at === undefined ? null : this.layout.rows[at].key;
  }

  /** → on a closed lane: open it; otherwise the next row if it is nested deeper. */
  in() {
    const row = this.rowByKey(this.selected);
    if (!row) return;
    if ((row.type === "lane" || row.head) && this.options.collapsed.has(row.lane.key)) {
      this.toggleLane(row.lane.key);
      return;
    }
    const at = this.indexOfKey(this.selected);
    const next = this.layout.rows[at + 1];
    if (next && next.depth > row.depth) this.select(next.key);
  }

  // Events

  listen() {
    this.el.addEventListener("scroll", () => {
      this.scrollTop = this.el.scrollTop;
      this.requestDraw();
    }, { passive: true });
    new ResizeObserver(() => {
      this.measure();
      this.requestDraw();
    }).observe(this.el);
    this.el.addEventListener("wheel", (event) => this.wheel(event), { passive: false });
    this.el.addEventListener("pointerdown", (event) => this.pointerDown(event));
    this.el.addEventListener("dblclick", (event) => {
      const row = this.rowAt(event);
      if (row?.type === "span") this.zoomTo(row.span);
    });
    this.el.addEventListener("keydown", (event) => this.key(event));
  }

  wheel(event) {
    const rect = this.el.getBoundingClientRect();
    const offset = event.clientX - rect.left - this.labelWidth;
    if (event.ctrlKey || event.metaKey) {
      event.preventDefault();
      const [from, to] = this.window(this.clock());
      const centre = offset >= 0 ? from + (offset / this.width) * (to - from) : null;
      this.zoomBy(Math.exp(event.deltaY * 0.002), centre);
    } else if (event.shiftKey || Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      if (!this.view) return;
      event.preventDefault();
      this.panBy((event.deltaX || event.deltaY) / this.width);
    }
  }

  pointerDown(event) {
    if (event.button !== 0) return;
    const startX = event.clientX;
    let dragged = false;
    let lastX = startX;
    const moveHandler = (move) => {
      if (Math.abs(move.clientX - startX) > 4) dragged = true;
      if (dragged && this.view) this.panBy((lastX - move.clientX) / this.width);
      lastX = move.clientX;
    };
    const up = (done) => {
      window.removeEventListener("pointermove", moveHandler);
      window.removeEventListener("pointerup", up);
      if (!dragged) this.click(done);
    };
    window.addEventListener("pointermove", moveHandler);
    window.addEventListener("pointerup", up);
  }

  click(event) {
    const row = this.rowAt(event);
    if (!row) return;
    if ((row.type === "lane" || row.head) && event.target instanceof Element && event.target.closest(".wf-caret")) {
      this.select(row.key, { scroll: false });
      this.toggleLane(row.lane.key);
      return;
    }
    this.select(row.key, { scroll: false });
  }

  rowAt(event) {
    const el = event.target instanceof Element ? event.target.closest(".wf-row") : null;
    return el?.row || null;
  }

  key(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const page = Math.max(1, Math.floor((this.viewHeight || 0) / ROW_H) - 2);
    const actions = {
      ArrowDown: () => (event.shiftKey ? null : this.move(1)),
      ArrowUp: () => (event.shiftKey ? null : this.move(-1)),
      j: () => this.move(1),
      k: () => this.move(-1),
      PageDown: () => this.move(page),
      PageUp: () => this.move(-page),
      Home: () => this.move(-Infinity),
      End: () => this.move(Infinity),
      ArrowLeft: () => (event.shiftKey ? this.panBy(-0.2) : this.out()),
      ArrowRight: () => (event.shiftKey ? this.panBy(0.2) : this.in()),
      Enter: () => this.activate(),
      " ": () => this.activate(),
      Escape: () => this.select(null),
      "+": () => this.zoomBy(0.5),
      "=": () => this.zoomBy(0.5),
      "-": () => this.zoomBy(2),
      0: () => this.fit(),
      z: () => {
        const row = this.rowByKey(this.selected);
        if (row?.type === "span") this.zoomTo(row.span);
      },
    };
    const action = actions[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  }

  activate() {
    const row = this.rowByKey(this.selected);
    if (!row) return;
    if (row.type === "lane") this.toggleLane(row.lane.key);
    else this.onActivate?.(row, this);
  }
}

function chips(span) {
  const found = [];
  const a = span.attributes;
  if (a.iteration !== undefined) found.push(h("span", { class: "wf-chip iter" }, `#${a.iteration}`));
  if (a.transfer_to) found.push(h("span", { class: "wf-chip via" }, `→ ${a.transfer_to}`));
  if (a.parked) found.push(h("span", { class: "wf-chip via", title: "The run waits on a person and holds nothing until the call is decided" }, "parked"));
  if (a.resumed) found.push(h("span", { class: "wf-chip via", title: "It waited on a person, parked, and went on once decided" }, "parked, went on"));
  if (a.outcome && a.outcome !== "done") found.push(h("span", { class: "wf-chip error" }, a.outcome));
  if (span.kind === "model" && a.attempts > 1) found.push(h("span", { class: "wf-chip retry", title: "tried again after retryable failures" }, `${a.attempts} attempts`));
  const decided = decisionChip(span);
  if (decided) found.push(h("span", { class: `wf-chip ${decided[1]}` }, decided[0]));
  if (span.status === "error" && !(a.outcome && a.outcome !== "done")) found.push(h("span", { class: "wf-chip error" }, "error"));
  return found;
}

/** The cost of the run's costliest span (0 when none is known). */
function costliest(spans) {
  let most = 0;
  for (const span of spans) most = Math.max(most, costValue(span.cost) ?? 0);
  return most;
}

function place(el, left, right, width) {
  const a = Math.max(left, -4);
  const b = Math.min(right, width + 4);
  el.style.left = `${a}px`;
  el.style.width = `${Math.max(b - a, 2)}px`;
  return a;
}

/** A bar's duration: after the bar, or before it, or inside its end when neither fits. */
function placeLabel(el, left, right, width) {
  const room = 8 + 6 * el.textContent.length;
  const where = right + room <= width ? "after" : right - left >= room ? "inside" : "before";
  if (el.dataset.where !== where) el.dataset.where = where;
  el.style.left = `${where === "after" ? right + 5 : where === "before" ? left - 5 : right - 5}px`;
}

function clamp(value, width) {
  return Math.min(Math.max(value, 0), width);
}

function arrowLayer(id) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "wf-arrows");
  svg.setAttribute("aria-hidden", "true");
  const defs = document.createElementNS(SVG, "defs");
  const marker = document.createElementNS(SVG, "marker");
  for (const [key, value] of Object.entries({ id: `wf-head-${id}`, viewBox: "0 0 8 8", refX: "7", refY: "4", markerWidth: "7", markerHeight: "7", orient: "auto" })) {
    marker.setAttribute(key, value);
  }
  const head = document.createElementNS(SVG, "path");
  head.setAttribute("d", "M0,0 L8,4 L0,8 z");
  head.setAttribute("class", "wf-arrow-head");
  marker.append(head);
  defs.append(marker);
  svg.layer = document.createElementNS(SVG, "g");
  svg.append(defs, svg.layer);
  return svg;
}

/** The time axis of the window [from, to] (µs) on a track ``width`` px wide, for a run
 * that began at ``origin``: a tick every nice step, about 110 px apart, each with its
 * label and its offset in px. A label is written right of its line; one too near the
 * track's right edge (``end``) is written left of it, so the edge does not cut it off. */
export function axisTicks(from, to, origin, width) {
  const step = niceStep((to - from) / Math.max(2, width / 110));
  const ticks = [];
  for (let at = origin + Math.ceil((from - origin) / step) * step; at <= to; at += step) {
    const left = (at - from) * (width / Math.max(to - from, 1)); // as the bars are placed
    ticks.push({ at, label: offsetLabel(at - origin), left, end: left > width - TICK_LABEL_PX });
  }
  return ticks;
}

/** A round step (1, 2 or 5 times a power of ten) of at least ``us`` microseconds. */
export function niceStep(us) {
  const power = 10 ** Math.floor(Math.log10(Math.max(us, 1)));
  for (const m of [1, 2, 5, 10]) if (power * m >= us) return power * m;
  return power * 10;
}

/** A time since the run began, on the axis: "0", "250 ms", "1.5 s". */
export function offsetLabel(us) {
  if (us <= 0) return "0";
  if (us < 1000) return `${Math.round(us)} µs`;
  if (us < 10_000) return `${(us / 1000).toFixed(1).replace(/\.0$/, "")} ms`;
  return formatDuration(us / 1000);
}
