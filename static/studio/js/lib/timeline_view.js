// Renders a session's events as a nested timeline: one group per invocation (a run),
// inside it one step per agent (agent_start .. agent_end, nested by branch), inside a
// step its messages, tool call/response pairs, approvals and errors. Hooks that changed
// a model or tool call are marked on its line; an answer parsed against an output
// schema shows as formatted JSON; a failure that degrades the run says so.
//
// Every stored event ends up as exactly one element carrying data-seq and data-type;
// a streamed partial is a provisional row (no data-seq) that the stored agent_message
// replaces. Everything from the server is written as text.

import { ApprovalCard } from "./approval.js";
import { answerText, QuestionCard } from "./question.js";
import { tally, tallyText, verdictText } from "./calls.js";
import { h, pretty, richText } from "./dom.js";
import { AFTER_TURN_CALLING, artifactMarks, attachments, CUT_OFF_CODES, degradedMark, fallbackText, figures, hookMarks, partsOf, policyBlock, provisionalKey, retryText, routeMarks, showsCall, stateDelta, structuredBlock, textOf } from "./events.js";
import { isActiveRun, WAITING_LABELS } from "./live.js";
import { costText, runsCost } from "./span_costs.js";
import { micros } from "./spans.js";
import { editedMark, forkButton } from "./fork.js";
import { ToolCallView } from "./tool_call.js";
import { formatClock, formatDuration, formatTime, formatTokens } from "./ui.js";
import { wallTimeBar } from "./wall_time.js";

const PREVIEW_CHARS = 90;

export class TimelineView {
  constructor(root, { sessionsUrl, waterfallUrl = null, forkable = false }) {
    this.root = root;
    this.forkable = forkable; // each stored event's row gets a "Fork here" button
    this.sessionsUrl = sessionsUrl;
    this.waterfallUrl = waterfallUrl; // each run and agent step links to its spans there
    this.runs = new Map(); // invocation id -> Run JSON
    this.runsById = new Map(); // run id -> Run JSON: where a resumed run came from
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
    this.counts = { events: 0, toolCalls: 0, errors: 0, modelCalls: 0, failedCalls: 0, cutCalls: 0, retries: 0, latencyMs: 0 };
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
    this.runsById.set(run.id, run);
    const earlier = this.invocations.get(this.runsById.get(run.resumed_from)?.invocation_id);
    if (earlier) this.updateSummary(earlier); // it says which run went on from it
    const inv = this.invocations.get(run.invocation_id);
    if (!inv) return;
    if (!isActiveRun(run)) this.settle(inv, run);
    this.updateSummary(inv);
  }

  /** ``inv``'s run ended: none of its calls is running any more, and its approval
   * cards say how it ended instead of offering buttons. */
  settle(inv, run) {
    if (inv.settledWith === run) return; // the same news again (each new invocation asks)
    inv.settledWith = run;
    for (const stack of inv.stacks.values()) for (const step of stack) if (step.timer.dataset.stopped) this.stop(step);
    for (const call of inv.calls.values()) call.ended(run);
    for (const card of inv.approvals.values()) card.expired(run);
    for (const row of inv.waits.values()) row.querySelector(".wait-state").textContent = "stopped";
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
      this.stop(step);
      step.waiting.textContent = "";
      step.el.classList.remove("running");
      this.openSteps.delete(step);
      touched.add(step.inv);
    }
    for (const inv of this.invocations.values()) {
      if (inv.id === invocationId) continue;
      this.settle(inv, this.runs.get(inv.id) || null);
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
        this.place(inv, event, this.row(event, "You", this.textBlock(event), attachments(event)));
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
        this.approvalRow(inv, event);
        break;
      case "approval_decision":
        this.decisionRow(inv, event);
        break;
      case "error":
        this.dropProvisional(event);
        this.place(inv, event, this.errorRow(inv, event));
        break;
      case "compaction":
        this.dropProvisional(event);
        this.place(inv, event, this.row(event, "Compaction", this.compactionBlock(event)));
        break;
      case "memory_saved":
        this.dropProvisional(event);
        this.place(inv, event, this.row(event, "Memory · key facts saved", keyFactsBlock(event)));
        break;
      case "user_question":
        this.questionRow(inv, event);
        break;
      case "user_answer":
        this.answerRow(inv, event);
        break;
      case "tool_started": // the effect journal: the tool call's own row already shows it
        break;
      case "run_parked":
        this.place(inv, event, this.row(event, "Parked · waiting on a person", h("div", { class: "text" },
          "The run holds nothing until the call is decided (or times out); then it goes on from here.")));
        break;
      case "run_paused":
      case "run_resumed":
        this.place(inv, event, this.row(event, event.type === "run_paused" ? "Paused" : "Resumed", this.textBlock(event)));
        break;
      case "policy_decision":
        this.place(inv, event, this.row(event, `Policy · ${event.policy?.action || "decision"}`, policyBlock(event)));
        break;
      case "model_fallback":
        this.place(inv, event, this.row(event, "Fallback", h("div", { class: "text" }, fallbackText(event))));
        break;
      case "model_retry": // the failed attempt's streamed text is provisional: the call starts again
        this.dropProvisional(event);
        this.place(inv, event, this.row(event, "Retry", h("div", { class: "text" }, retryText(event))));
        break;
      case "rate_limit_waiting":
        this.rateLimitWaiting(inv, event);
        break;
      case "rate_limit_wait":
        this.rateLimitWaited(inv, event);
        break;
      default:
        this.place(inv, event, this.row(event, event.type, h("pre", {}, pretty(event.parts))));
    }
    this.updateSummary(inv);
  }

  /** A streamed chunk: grows the provisional message of its agent. A chunk without
   * parts is a model call slow to answer showing itself: the row says the agent is
   * calling its model until the first text arrives (or, for a call made once its turn
   * is done, what the call is for, until it is stored). */
  addPartial(event) {
    const inv = this.invocation(event);
    const key = provisionalKey(event);
    let row = this.provisional.get(key);
    if (!row) {
      const doing = AFTER_TURN_CALLING[event.type] ?? "calling the model";
      row = h("div", { class: `ev ${event.type} provisional`, dataset: { provisional: "1" } },
        h("span", { class: "seq" }, "…"),
        h("div", { class: "body" },
          h("div", { class: "line" }, h("span", { class: "kind" }, `${event.author} · ${doing}${event.model ? ` (${event.model})` : ""}…`)),
          h("details", { class: "thinking live", hidden: true }, h("summary", {}, "Thinking…"), h("div", { class: "text thought" })),
          h("div", { class: "text answer" })));
      this.provisional.set(key, row);
      this.containerFor(inv, event).append(row);
    }
    if (showsCall(event)) return;
    row.querySelector(".kind").textContent = `${event.author} · streaming`;
    const thinking = textOf(event, "thinking");
    if (thinking) {
      row.querySelector(".thinking").hidden = false;
      row.querySelector(".thought").append(thinking);
    }
    row.querySelector(".answer").append(textOf(event));
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
    const wall = h("div", { class: "inv-wall" });
    const waterfall = this.waterfallUrl
      ? h("a", { class: "inv-waterfall", href: `${this.waterfallUrl}?invocation=${encodeURIComponent(event.invocation_id)}` }, "Waterfall")
      : null;
    const el = h("details", { class: "inv", id: `inv-${event.invocation_id}`, open: true, dataset: { invocation: event.invocation_id } },
      h("summary", {}, title, status, totals, waterfall, wall), body);
    this.root.append(el);
    inv = {
      id: event.invocation_id, el, body, titleEl: title, statusEl: status, totalsEl: totals, wallEl: wall,
      title: "", stacks: new Map(), calls: new Map(), approvals: new Map(), waits: new Map(),
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
      timer, waiting, this.spanLink(inv, event), this.forkHere(event));
    const el = h("div", { class: "step", dataset: { seq: event.seq, type: event.type, agent: event.author } }, head, body);
    parent.append(el);
    const step = { inv, el, body, head, timer, waiting, agent: event.author, spanId: event.span_id, startMs: micros(event.created_at) / 1000 };
    if (!inv.stacks.has(event.branch || "")) inv.stacks.set(event.branch || "", []);
    inv.stacks.get(event.branch || "").push(step);
    if (!this.isFinished(inv)) {
      this.openSteps.add(step);
      el.classList.add("running");
    } else {
      this.stop(step);
    }
  }

  /** A link to the agent's span in the waterfall (null without one). */
  spanLink(inv, event) {
    if (!this.waterfallUrl || !event.span_id) return null;
    const href = `${this.waterfallUrl}?invocation=${encodeURIComponent(inv.id)}#span-${event.span_id}`;
    return h("a", { class: "step-waterfall", href, title: "This agent's run in the waterfall" }, "waterfall");
  }

  /** A step its run left open: it says how the run ended (or "stopped" until known). */
  stop(step) {
    const run = this.runs.get(step.inv.id);
    const finished = ["succeeded", "degraded"].includes(run?.status);
    const stopped = run?.error_code === "forked" ? "forked here" : run?.status;
    step.timer.textContent = run && !isActiveRun(run) && !finished ? stopped : "stopped";
    step.timer.dataset.stopped = "1";
  }

  endStep(inv, event) {
    this.dropProvisional(event);
    const [stack, index] = this.openStepOf(inv, event);
    if (index < 0) {
      this.place(inv, event, this.row(event, `${event.author} ended`));
      return;
    }
    const step = stack[index];
    stack.splice(index);
    this.openSteps.delete(step);
    if (step.agent !== event.author) this.rename(step, event);
    step.el.classList.remove("running");
    step.waiting.textContent = "";
    // To the microsecond, as the waterfall times its span: read to the millisecond, a
    // step of 603.1 ms from 0.9 ms to 604.0 ms would be "604 ms" here and "603 ms" there.
    const startMs = event.started_at ? Math.min(step.startMs, micros(event.started_at) / 1000) : step.startMs;
    step.timer.textContent = formatDuration(micros(event.created_at) / 1000 - startMs);
    step.timer.dataset.seq = event.seq;
    step.timer.dataset.type = event.type;
    step.timer.dataset.time = event.created_at;
    step.timer.dataset.timeLabel = "ended ";
  }

  /** The open step an agent_end closes, as [its stack, its index] (index -1: none): the
   * step of its span, else its agent's innermost on its branch. */
  openStepOf(inv, event) {
    if (event.span_id) {
      for (const stack of inv.stacks.values()) {
        const index = stack.findIndex((step) => step.spanId === event.span_id);
        if (index >= 0) return [stack, index];
      }
    }
    const stack = inv.stacks.get(event.branch || "") || [];
    return [stack, stack.map((s) => s.agent).lastIndexOf(event.author)];
  }

  /** An ingested parent span, opened from its first child under the service's name
   * before it came, named by its own span as it closes the step (SpanTree does alike). */
  rename(step, event) {
    step.agent = event.author;
    step.el.dataset.agent = event.author;
    const name = step.head.querySelector(".agent");
    name.textContent = event.author;
    name.title = event.branch ? `branch ${event.branch}` : "";
  }

  // Rows

  row(event, label, ...body) {
    return h("div", { class: `ev ${event.type}`, dataset: { seq: event.seq, type: event.type } },
      h("span", { class: "seq", dataset: { time: event.created_at } }, `#${event.seq}`),
      h("div", { class: "body" }, h("div", { class: "line" }, h("span", { class: "kind" }, label), figures(event), routeMarks(event), hookMarks(event), degradedMark(event), editedMark(event), this.forkHere(event)), ...body));
  }

  forkHere(event) {
    return this.forkable ? forkButton(event) : null;
  }

  textBlock(event) {
    const text = textOf(event);
    return text ? h("div", { class: "text" }, richText(text)) : null;
  }

  messageRow(inv, event) {
    const thinking = textOf(event, "thinking");
    const calls = partsOf(event, "tool_call");
    const step = this.stepOf(inv, event);
    const retries = calls.length > 0 && calls.every((call) => call.retry_of);
    const many = calls.length === 1 ? "a tool" : `${calls.length} tools`;
    const kind = retries ? `runs again ${calls.length === 1 ? "a call" : `${calls.length} calls`} the interruption stopped before it started`
      : calls.length ? `calls ${many}` : "reply";
    const label = step?.agent === event.author ? kind : `${event.author} · ${kind}`;
    return this.row(event, label,
      thinking ? h("details", { class: "thinking" }, h("summary", {}, "Thinking"), h("div", { class: "text" }, thinking)) : null,
      this.textBlock(event),
      structuredBlock(event),
      calls.map((call) => this.toolCall(inv, call)),
      stateDelta(event));
  }

  toolCall(inv, call) {
    const view = new ToolCallView(call, this.isFinished(inv) ? this.runs.get(inv.id) : null);
    inv.calls.set(call.call_id, view);
    return view.el;
  }

  toolResponse(inv, event) {
    let anchored = false;
    for (const part of partsOf(event, "tool_response")) {
      const call = inv.calls.get(part.call_id);
      if (!call) continue;
      const attrs = anchored ? {} : { seq: event.seq, type: event.type };
      anchored = true;
      call.answered(part, event, attrs);
      if (attrs.seq) call.result.querySelector(".label")?.append(" ", this.forkHere(event) || "");
      const edited = attrs.seq ? editedMark(event) : null;
      if (edited) call.summary.insertBefore(edited, call.outcomeEl);
      const transfer = event.actions?.transfer_to_agent;
      if (transfer) call.summary.append(h("span", { class: "chip" }, `→ ${transfer}`));
      const saved = artifactMarks(event);
      if (saved) call.summary.append(saved);
      const delta = stateDelta(event);
      if (delta) call.body.append(delta);
    }
    if (!anchored) {
      const parts = partsOf(event, "tool_response");
      this.place(inv, event, this.row(event, "Tool response",
        parts.map((p) => h("details", { class: p.is_error ? "tool is-error" : "tool", open: p.is_error },
          h("summary", {}, h("span", { class: "name" }, p.name), h("span", { class: "preview" }, p.result.slice(0, PREVIEW_CHARS))),
          h("div", { class: "tool-body" }, h("pre", {}, p.result)))),
        artifactMarks(event), stateDelta(event)));
    }
  }

  /** An approval request joins its tool call (args, card, decision, result in that
   * order); one whose call is not loaded gets a row of its own. */
  approvalRow(inv, event) {
    const call = inv.calls.get(event.approval.call_id);
    const card = new ApprovalCard(event, this.sessionsUrl, { embedded: Boolean(call) });
    inv.approvals.set(event.approval.call_id, card);
    if (call) call.awaitApproval(card, event);
    else this.place(inv, event, this.row(event, "Approval request", card.el));
    if (this.isFinished(inv)) card.expired(this.runs.get(inv.id));
  }

  /** A model call waits for its rate limit: an open row until its wait ends. */
  rateLimitWaiting(inv, event) {
    const state = h("span", { class: "chip wait-state" }, this.isFinished(inv) ? "stopped" : "waiting…");
    const row = this.row(event, "Waiting for the rate limit", this.textBlock(event));
    row.querySelector(".line").append(state);
    row.classList.add("open");
    if (event.span_id) inv.waits.set(event.span_id, row);
    this.place(inv, event, row);
  }

  /** The wait ends: its open row closes (runs stored before open rows get their own). */
  rateLimitWaited(inv, event) {
    const open = event.span_id && inv.waits.get(event.span_id);
    const label = event.error ? "Stopped waiting for the rate limit" : "Waited for the rate limit";
    if (!open) {
      this.place(inv, event, this.row(event, label, this.textBlock(event)));
      return;
    }
    inv.waits.delete(event.span_id);
    open.classList.remove("open");
    open.querySelector(".kind").textContent = label;
    open.querySelector(".wait-state").textContent = event.error ? "stopped" : "done";
    open.querySelector(".text").textContent = textOf(event) || "";
  }

  questionRow(inv, event) {
    const call = inv.calls.get(event.question.call_id);
    const card = new QuestionCard(event, this.sessionsUrl);
    inv.approvals.set(event.question.call_id, card);
    if (call) call.awaitAnswer(card, event);
    else this.place(inv, event, this.row(event, "Question", card.el));
    if (this.isFinished(inv)) card.expired(this.runs.get(inv.id));
  }

  answerRow(inv, event) {
    const q = event.question || {};
    const call = inv.calls.get(q.call_id);
    if (call) {
      call.answerGiven(event);
      return;
    }
    inv.approvals.get(q.call_id)?.decided(event);
    this.place(inv, event, this.row(event, "Answer", h("div", { class: "text" }, answerText(q))));
  }

  decisionRow(inv, event) {
    const a = event.approval || {};
    const call = inv.calls.get(a.call_id);
    if (call) {
      call.decided(event);
      return;
    }
    inv.approvals.get(a.call_id)?.decided(event);
    this.place(inv, event, this.row(event, "Approval decision", h("div", { class: "text" }, `${a.tool || "tool"}: ${verdictText(a)}`)));
  }

  /** A failure: terminal (the run ends), or one the run went past (non-fatal, a
   * rejected structured answer with its text, or one that degrades the run). */
  errorRow(inv, event) {
    const error = event.error || { code: "error", message: "" };
    if (error.code === "replay_diverged") {  // where a replay left its record and went live
      const el = this.row(event, "Replay diverged", h("div", { class: "text" }, error.message));
      el.classList.add("replay-diverged");
      return el;
    }
    const wentOn = error.failure && error.failure !== "terminal" && !error.degraded && !CUT_OFF_CODES.has(error.code);
    const went = wentOn ? " (went on)" : ""; // a call cut off: the run stopped, it did not go on
    const rejected = textOf(event);
    const el = this.row(event, `Error · ${error.code}${went}`, h("div", { class: "text" }, error.message),
      rejected ? h("details", { class: "rejected" }, h("summary", {}, "The answer it gave"), h("pre", {}, rejected)) : null,
      stateDelta(event));
    el.classList.toggle("went-on", (error.failure ?? "terminal") !== "terminal");
    return el;
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

  /** How the loaded tool calls of ``invocations`` (default: all) turned out. */
  callTally(invocations = this.invocations.values()) {
    const outcomes = [];
    for (const inv of invocations) for (const call of inv.calls.values()) outcomes.push(call.outcome);
    return tally(outcomes);
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
    // A message without a model span (schema 2) is its agent's own: no model was called.
    const modelless = event.type === "agent_message" && event.schema_version >= 2 && !event.span_id;
    // The calls after a turn count too: its key facts, and a summary not read from the cache.
    const afterTurn = event.type === "memory_saved" || (event.type === "compaction" && !event.cached);
    if ((event.type === "agent_message" && !modelless) || afterTurn) {
      this.counts.modelCalls += 1;
      this.counts.latencyMs += event.latency_ms || 0;
    }
    const calls = partsOf(event, "tool_call").length;
    s.toolCalls += calls;
    this.counts.toolCalls += calls;
    if (event.type === "model_retry") this.counts.retries += 1;
    if (event.type === "error") {
      s.errors += 1;
      this.counts.errors += 1;
      // a model call that failed for good (agents_core.exceptions.FailedModelCall)
      if (event.error?.attempts !== null && event.error?.attempts !== undefined) this.counts.failedCalls += 1;
      if (CUT_OFF_CODES.has(event.error?.code)) this.counts.cutCalls += 1;
      s.terminal ||= (event.error?.failure ?? "terminal") === "terminal";
    }
  }

  /** What heads an invocation: its user message's first line, else its run's message; a
   * run resumed from an interrupted one (it has no message) says so, linking to it. */
  titleOf(inv, run) {
    if (!run?.resumed_from) return [inv.title || (run?.message ?? `Invocation ${inv.id.slice(0, 8)}`), ...this.resumedAs(run)];
    const earlier = this.runsById.get(run.resumed_from);
    const label = `run ${run.resumed_from.slice(0, 8)}`;
    const link = earlier?.invocation_id
      ? h("a", { class: "inv-resumed-from", href: `#inv-${earlier.invocation_id}` }, label)
      : label;
    if (earlier?.error_code === "forked") return ["Went on from the fork point, after ", link];
    return ["Resumed from ", link, " at its last step"];
  }

  /** " · resumed as run …" on an interrupted run that a later run went on from. */
  resumedAs(run) {
    if (run?.status !== "interrupted") return [];
    const later = [...this.runsById.values()].find((other) => other.resumed_from === run.id);
    if (!later?.invocation_id) return [];
    return [run.error_code === "forked" ? " · went on as " : " · resumed as ", h("a", { class: "inv-resumed-as", href: `#inv-${later.invocation_id}` }, `run ${later.id.slice(0, 8)}`)];
  }

  updateSummary(inv) {
    const s = inv.stats;
    const run = this.runs.get(inv.id);
    inv.titleEl.replaceChildren(...this.titleOf(inv, run));
    const status = run?.status || (s.terminal ? "failed" : "");
    inv.statusEl.className = `badge ${status}`;
    inv.statusEl.textContent = run?.error_code === "forked" ? "forked here" : status;
    inv.statusEl.hidden = !status;
    const chips = [`${s.events} events`];
    const { input, output } = this.tokens(inv.id, run);
    if (input || output) chips.push(`${formatTokens(input, output)} tokens`);
    const cost = costText(runsCost([run]));
    if (cost) chips.push(`cost ${cost}`);
    if (s.toolCalls) chips.push(tallyText(this.callTally([inv]), "tool call"));
    if (s.errors) chips.push(`${s.errors} error${s.errors === 1 ? "" : "s"}`);
    const started = run?.started_at || s.first;
    const ended = run?.ended_at || (this.activeInvocation === inv.id ? null : s.last);
    if (started && ended && !run?.timing) chips.push(formatDuration((micros(ended) - micros(started)) / 1000));
    inv.wallEl.replaceChildren(...[wallTimeBar(run?.timing)].filter(Boolean));
    inv.totalsEl.replaceChildren(...chips.map((c) => h("span", { class: /error|denied|failed/.test(c) ? "chip error" : "chip" }, c)));
  }
}


/** A turn's key facts (``memory_saved``): one text part per fact saved, as text. */
function keyFactsBlock(event) {
  const facts = partsOf(event, "text").map((part) => part.text);
  if (!facts.length) return h("div", { class: "text muted" }, "Nothing worth keeping.");
  return h("ul", { class: "key-facts" }, ...facts.map((fact) => h("li", {}, fact)));
}
