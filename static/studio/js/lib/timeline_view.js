// Renders a session's events as a nested timeline: one group per invocation (a run),
// inside it one step per agent (agent_start .. agent_end, nested by branch), inside a
// step its messages, tool call/response pairs, approvals and errors.
//
// Every stored event ends up as exactly one element carrying data-seq and data-type;
// a streamed partial is a provisional row (no data-seq) that the stored agent_message
// replaces. Everything from the server is written as text.

import { ApprovalCard } from "./approval.js";
import { h, pretty, richText } from "./dom.js";
import { clip, figures, partsOf, provisionalKey, stateDelta, textOf } from "./events.js";
import { isActiveRun, WAITING_LABELS } from "./live.js";
import { formatClock, formatDuration, formatTime } from "./ui.js";

const PREVIEW_CHARS = 90;

export class TimelineView {
  constructor(root, { sessionsUrl }) {
    this.root = root;
    this.sessionsUrl = sessionsUrl;
    this.runs = new Map(); // invocation id -> Run JSON
    this.activeInvocation = null;
    this.reset();
    // Times are tooltips: written when the pointer first reaches them, so the first
    // render formats none (and loads no locale data) for hundreds of rows.
    root.addEventListener("pointerover", (event) => {
      const el = event.target instanceof Element ? event.target.closest("[data-time]") : null;
      if (el && !el.title) el.title = `${el.dataset.timeLabel || ""}${formatTime(el.dataset.time)}`;
    });
  }

  reset() {
    for (const inv of this.invocations?.values() ?? []) inv.el.remove();
    this.invocations = new Map();
    this.provisional = new Map();
    this.openSteps = new Set();
    this.counts = { events: 0, toolCalls: 0, errors: 0, modelCalls: 0, latencyMs: 0 };
  }

  /** Run ``fn`` (which adds events) with new invocations built in a detached fragment
   * that joins the page once at the end: a page of events lands in one insertion. */
  batch(fn) {
    const root = this.root;
    this.root = document.createDocumentFragment();
    try {
      fn();
    } finally {
      root.append(this.root);
      this.root = root;
    }
  }

  // Runs and liveness

  setRun(run) {
    if (!run?.invocation_id) return;
    this.runs.set(run.invocation_id, run);
    const inv = this.invocations.get(run.invocation_id);
    if (inv) this.updateSummary(inv);
  }

  /** The run now executing (null when none) and what it waits on. */
  setActive(invocationId, waitingFor) {
    this.activeInvocation = invocationId;
    this.stopExcept(invocationId);
    for (const step of this.openSteps) step.waiting.textContent = "";
    const inv = invocationId && this.invocations.get(invocationId);
    if (!inv) return;
    const innermost = [...this.openSteps].filter((s) => s.inv === inv).pop();
    if (innermost && waitingFor) {
      innermost.waiting.textContent = WAITING_LABELS[waitingFor] || `waiting for ${waitingFor}`;
    }
    this.updateSummary(inv);
  }

  /** A session runs one invocation at a time: every other one is over, so its open
   * steps stop ticking, its approvals close and its streamed text goes. */
  stopExcept(invocationId) {
    const touched = new Set();
    for (const step of [...this.openSteps]) {
      if (step.inv.id === invocationId) continue;
      step.timer.textContent = "stopped";
      step.waiting.textContent = "";
      step.el.classList.remove("running");
      this.openSteps.delete(step);
      touched.add(step.inv);
    }
    for (const inv of this.invocations.values()) {
      if (inv.id === invocationId) continue;
      for (const card of inv.approvals.values()) card.expired();
    }
    for (const [key, row] of this.provisional) {
      if (key.startsWith(`${invocationId}|`)) continue;
      row.remove();
      this.provisional.delete(key);
    }
    for (const inv of touched) this.updateSummary(inv);
  }

  isFinished(inv) {
    const run = this.runs.get(inv.id);
    return Boolean(run) && !isActiveRun(run);
  }

  tick(now) {
    for (const step of this.openSteps) {
      if (step.inv.id === this.activeInvocation) step.timer.textContent = formatClock(now - step.startMs);
    }
  }

  // Events

  add(event) {
    const inv = this.invocation(event);
    this.count(inv, event);
    switch (event.type) {
      case "user_message":
        inv.title ||= event.parts.map((p) => p.text || "").join("").split("\n")[0];
        this.place(inv, event, this.row(event, "You", this.textBlock(event)));
        break;
      case "agent_start":
        this.startStep(inv, event);
        break;
      case "agent_end":
        this.endStep(inv, event);
        break;
      case "agent_message":
        this.dropProvisional(event);
        this.place(inv, event, this.messageRow(inv, event));
        break;
      case "tool_response":
        this.toolResponse(inv, event);
        break;
      case "approval_request":
        this.place(inv, event, this.approvalRow(inv, event));
        break;
      case "approval_decision":
        this.place(inv, event, this.decisionRow(inv, event));
        break;
      case "error":
        this.dropProvisional(event);
        this.place(inv, event, this.errorRow(inv, event));
        break;
      case "compaction":
        this.place(inv, event, this.row(event, "Compaction", this.compactionBlock(event)));
        break;
      default:
        this.place(inv, event, this.row(event, event.type, h("pre", {}, pretty(event.parts))));
    }
    this.updateSummary(inv);
  }

  /** A streamed chunk: grows the provisional message of its agent. */
  addPartial(event) {
    const inv = this.invocation(event);
    const key = provisionalKey(event);
    let row = this.provisional.get(key);
    if (!row) {
      row = h("div", { class: "ev agent_message provisional", dataset: { provisional: "1" } },
        h("span", { class: "seq" }, "…"),
        h("div", { class: "body" },
          h("div", { class: "line" }, h("span", { class: "kind" }, `${event.author} · streaming`)),
          h("div", { class: "text" })));
      this.provisional.set(key, row);
      this.containerFor(inv, event).append(row);
    }
    row.querySelector(".text").append(textOf(event));
  }

  dropProvisional(event) {
    const key = provisionalKey(event);
    this.provisional.get(key)?.remove();
    this.provisional.delete(key);
  }

  // Structure: invocations and steps

  invocation(event) {
    let inv = this.invocations.get(event.invocation_id);
    if (inv) return inv;
    const title = h("span", { class: "inv-title" });
    const status = h("span", { class: "badge" });
    const totals = h("span", { class: "totals" });
    const body = h("div", { class: "inv-body" });
    const el = h("details", { class: "inv", open: true, dataset: { invocation: event.invocation_id } },
      h("summary", {}, title, status, totals), body);
    this.root.append(el);
    inv = {
      id: event.invocation_id, el, body, titleEl: title, statusEl: status, totalsEl: totals,
      title: "", stacks: new Map(), calls: new Map(), approvals: new Map(),
      stats: { events: 0, toolCalls: 0, errors: 0, terminal: false, input: 0, output: 0, first: null, last: null, firstSeq: event.seq },
    };
    this.invocations.set(event.invocation_id, inv);
    this.stopExcept(inv.id);
    return inv;
  }

  /** Where an event of (branch, author) goes: the innermost open step of that agent on
   * its branch, else the innermost open step of the branch or of its nearest ancestor. */
  containerFor(inv, event) {
    let branch = event.branch;
    while (branch) {
      const stack = inv.stacks.get(branch);
      if (stack?.length) {
        const own = [...stack].reverse().find((step) => step.agent === event.author);
        return (own || stack[stack.length - 1]).body;
      }
      const dot = branch.lastIndexOf(".");
      branch = dot > 0 ? branch.slice(0, dot) : "";
    }
    return inv.body;
  }

  stepOf(inv, event) {
    const stack = inv.stacks.get(event.branch || "") || [];
    return [...stack].reverse().find((step) => step.agent === event.author) || null;
  }

  place(inv, event, el) {
    this.containerFor(inv, event).append(el);
  }

  startStep(inv, event) {
    const parent = this.containerFor(inv, { branch: event.branch, author: null });
    const timer = h("span", { class: "chip" }, "");
    const waiting = h("span", { class: "waiting" });
    const body = h("div", { class: "step-body" });
    const head = h("div", { class: "step-head" },
      h("span", { class: "icon", "aria-hidden": "true" }, "◆"),
      h("span", { class: "agent", title: event.branch ? `branch ${event.branch}` : null }, event.author),
      h("span", { class: "seq" }, `#${event.seq}`),
      timer, waiting);
    const el = h("div", { class: "step", dataset: { seq: event.seq, type: event.type, agent: event.author } }, head, body);
    parent.append(el);
    const step = { inv, el, body, head, timer, waiting, agent: event.author, startMs: Date.parse(event.created_at) };
    if (!inv.stacks.has(event.branch || "")) inv.stacks.set(event.branch || "", []);
    inv.stacks.get(event.branch || "").push(step);
    if (!this.isFinished(inv)) {
      this.openSteps.add(step);
      el.classList.add("running");
    } else {
      timer.textContent = "stopped";
    }
  }

  endStep(inv, event) {
    this.dropProvisional(event);
    const stack = inv.stacks.get(event.branch || "") || [];
    const index = stack.map((s) => s.agent).lastIndexOf(event.author);
    if (index < 0) {
      this.place(inv, event, this.row(event, `${event.author} ended`));
      return;
    }
    const step = stack[index];
    stack.splice(index);
    this.openSteps.delete(step);
    step.el.classList.remove("running");
    step.waiting.textContent = "";
    step.timer.textContent = formatDuration(Date.parse(event.created_at) - step.startMs);
    step.timer.dataset.seq = event.seq;
    step.timer.dataset.type = event.type;
    step.timer.dataset.time = event.created_at;
    step.timer.dataset.timeLabel = "ended ";
  }

  // Rows

  row(event, label, ...body) {
    return h("div", { class: `ev ${event.type}`, dataset: { seq: event.seq, type: event.type } },
      h("span", { class: "seq", dataset: { time: event.created_at } }, `#${event.seq}`),
      h("div", { class: "body" }, h("div", { class: "line" }, h("span", { class: "kind" }, label), figures(event)), ...body));
  }

  textBlock(event) {
    const text = textOf(event);
    return text ? h("div", { class: "text" }, richText(text)) : null;
  }

  messageRow(inv, event) {
    const thinking = textOf(event, "thinking");
    const calls = partsOf(event, "tool_call");
    const step = this.stepOf(inv, event);
    const kind = calls.length ? `calls ${calls.length === 1 ? "a tool" : `${calls.length} tools`}` : "reply";
    const label = step?.agent === event.author ? kind : `${event.author} · ${kind}`;
    return this.row(event, label,
      thinking ? h("details", { class: "thinking" }, h("summary", {}, "Thinking"), h("div", { class: "text" }, thinking)) : null,
      this.textBlock(event),
      calls.map((call) => this.toolCall(inv, call)),
      stateDelta(event));
  }

  toolCall(inv, call) {
    const state = h("span", { class: "chip state" }, "running…");
    const outcome = h("span", { class: "outcome" });
    const result = h("div", { class: "result" }, h("p", { class: "label" }, "Result"), h("p", { class: "hint" }, "Waiting for the result…"));
    const el = h("details", { class: "tool pending", dataset: { callId: call.call_id, tool: call.name } },
      h("summary", {}, h("span", { class: "icon", "aria-hidden": "true" }, "⚙"), h("span", { class: "name" }, call.name),
        h("span", { class: "preview" }, preview(call.args)), outcome, state),
      h("div", { class: "tool-body" },
        h("div", {}, h("p", { class: "label" }, "Arguments"), h("pre", {}, pretty(call.args))),
        result));
    inv.calls.set(call.call_id, { el, state, result, outcome });
    return el;
  }

  toolResponse(inv, event) {
    let anchored = false;
    for (const part of partsOf(event, "tool_response")) {
      const call = inv.calls.get(part.call_id);
      if (!call) continue;
      const attrs = anchored ? {} : { seq: event.seq, type: event.type };
      anchored = true;
      call.result.replaceWith(h("div", { class: "result", dataset: attrs },
        h("p", { class: "label" }, part.is_error ? "Error" : "Result"), h("pre", {}, part.result)));
      call.el.classList.remove("pending");
      call.outcome.textContent = `→ ${clip(part.result.replace(/\s+/g, " "), 48)}`;
      call.el.classList.toggle("is-error", part.is_error);
      if (part.is_error) call.el.open = true;
      call.state.textContent = part.is_error ? "error" : (event.latency_ms !== null && event.latency_ms !== undefined ? formatDuration(event.latency_ms) : "done");
      const transfer = event.actions?.transfer_to_agent;
      if (transfer) call.el.querySelector("summary").append(h("span", { class: "chip" }, `→ ${transfer}`));
      const delta = stateDelta(event);
      if (delta) call.el.querySelector(".tool-body").append(delta);
    }
    if (!anchored) {
      const parts = partsOf(event, "tool_response");
      this.place(inv, event, this.row(event, "Tool response",
        parts.map((p) => h("details", { class: p.is_error ? "tool is-error" : "tool", open: p.is_error },
          h("summary", {}, h("span", { class: "name" }, p.name), h("span", { class: "preview" }, p.result.slice(0, PREVIEW_CHARS))),
          h("div", { class: "tool-body" }, h("pre", {}, p.result)))),
        stateDelta(event)));
    }
  }

  approvalRow(inv, event) {
    const card = new ApprovalCard(event, this.sessionsUrl);
    inv.approvals.set(event.approval.call_id, card);
    if (this.isFinished(inv)) card.expired();
    return this.row(event, "Approval request", card.el);
  }

  decisionRow(inv, event) {
    const a = event.approval || {};
    inv.approvals.get(a.call_id)?.decided(event);
    const verdict = a.decision === "approve" ? "approved" : "denied";
    return this.row(event, "Approval decision", h("div", { class: "text" },
      `${a.tool || "tool"} ${verdict}${a.decided_by ? ` by ${a.decided_by}` : ""}${a.reason ? `: ${a.reason}` : ""}`));
  }

  errorRow(inv, event) {
    const error = event.error || { code: "error", message: "" };
    const label = `Error · ${error.code}${error.failure && error.failure !== "terminal" ? ` (${error.failure})` : ""}`;
    return this.row(event, label, h("div", { class: "text" }, error.message), stateDelta(event));
  }

  compactionBlock(event) {
    const range = event.actions?.compaction;
    return h("div", { class: "text" },
      range ? `Events #${range.start_seq}–#${range.end_seq} summarised: ` : "", this.textBlock(event));
  }

  // Figures

  /** Tokens of an invocation: the run's own figures, or what its loaded events say
   * while the run (which totals them when it ends) is still going. */
  tokens(invocationId, run) {
    const stats = this.invocations.get(invocationId)?.stats;
    return {
      input: Math.max(run?.input_tokens ?? 0, stats?.input ?? 0),
      output: Math.max(run?.output_tokens ?? 0, stats?.output ?? 0),
    };
  }

  count(inv, event) {
    const s = inv.stats;
    s.events += 1;
    s.first ??= event.created_at;
    s.last = event.created_at;
    this.counts.events += 1;
    if (event.usage) {
      s.input += event.usage.input_tokens;
      s.output += event.usage.output_tokens;
    }
    if (event.type === "agent_message") {
      this.counts.modelCalls += 1;
      this.counts.latencyMs += event.latency_ms || 0;
    }
    const calls = partsOf(event, "tool_call").length;
    s.toolCalls += calls;
    this.counts.toolCalls += calls;
    if (event.type === "error") {
      s.errors += 1;
      this.counts.errors += 1;
      s.terminal ||= (event.error?.failure ?? "terminal") === "terminal";
    }
  }

  updateSummary(inv) {
    const s = inv.stats;
    const run = this.runs.get(inv.id);
    inv.titleEl.textContent = inv.title || (run?.message ?? `Invocation ${inv.id.slice(0, 8)}`);
    const status = run?.status || (s.terminal ? "failed" : "");
    inv.statusEl.className = `badge ${status}`;
    inv.statusEl.textContent = status;
    inv.statusEl.hidden = !status;
    const chips = [`${s.events} events`];
    const { input, output } = this.tokens(inv.id, run);
    if (input || output) chips.push(`${input}↓ ${output}↑ tok`);
    if (s.toolCalls) chips.push(`${s.toolCalls} tool call${s.toolCalls === 1 ? "" : "s"}`);
    if (s.errors) chips.push(`${s.errors} error${s.errors === 1 ? "" : "s"}`);
    const started = run?.started_at || s.first;
    const ended = run?.ended_at || (this.activeInvocation === inv.id ? null : s.last);
    if (started && ended) chips.push(formatDuration(Date.parse(ended) - Date.parse(started)));
    inv.totalsEl.replaceChildren(...chips.map((c) => h("span", { class: c.includes("error") ? "chip error" : "chip" }, c)));
  }
}

function preview(args) {
  return clip(JSON.stringify(args ?? {}), PREVIEW_CHARS);
}
