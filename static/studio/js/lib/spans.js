// Spans in the browser: the mechanics of agents_core/spans.py, line for line, so a page
// can grow a run's spans from the websocket's events. Seeded with the spans API's output
// (the spans of the events read so far), it applies each later event to the span it
// names by span_id, exactly as SpanTree.observe does: a span opens on first sight, closes
// on the event that closes it, and a streamed model chunk opens its call's span.
// tests/e2e/test_pages_waterfall.py checks that this store, fed a run's stored events,
// gives what GET /api/runs/<id>/spans/ gives.
//
// Times are integers of microseconds since the epoch (`start`, `end`), as Python's
// datetimes hold them; `toWire` writes them as pydantic does. Costs (`cost`) are summed
// up the tree by lib/span_costs.js whenever the spans are read after a change.

import { callCostOf, rollUpCosts } from "./span_costs.js";

const PREVIEW_CHARS = 2000; // agents_core.spans.PREVIEW_CHARS
// agents_core.span_contract.AFTER_TURN: model calls a runner makes once its agent is done
const AFTER_TURN = { memory_saved: "key facts", compaction: "summary" };
// agents_core.span_contract.AFTER_TURN_FAILED: their error codes when they fail or are cut off
const AFTER_TURN_FAILED = {
  key_facts_failed: "key facts", key_facts_cut_off: "key facts",
  summary_failed: "summary", summary_cut_off: "summary",
};
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;
const IDENTIFIER = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u;

/** Microseconds since the epoch of an ISO 8601 time (as datetime.fromisoformat reads it). */
export function micros(text) {
  const value = String(text);
  if (value.length === 27 && value[26] === "Z" && value[19] === ".") {
    // What Studio writes: 2026-01-02T03:04:05.123456Z (the common case, read quickly).
    return Date.parse(`${value.slice(0, 23)}Z`) * 1000 + Number(value.slice(23, 26));
  }
  const m = ISO.exec(value);
  if (!m) return Date.parse(text) * 1000;
  const [, y, mo, d, h, mi, s, frac = "", zone] = m;
  let us = Date.UTC(+y, +mo - 1, +d, +h, +mi, +s) * 1000 + Number(`${frac}000000`.slice(0, 6));
  if (zone !== "Z") {
    const sign = zone[0] === "-" ? -1 : 1;
    us -= sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6))) * 60e6;
  }
  return us;
}

/** A time in microseconds written as pydantic writes a UTC datetime. */
export function isoOf(us) {
  const seconds = Math.floor(us / 1e6);
  const fraction = us - seconds * 1e6;
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  return fraction ? `${base}.${String(fraction).padStart(6, "0")}Z` : `${base}Z`;
}

/** timedelta(milliseconds=ms) in microseconds: rounded half to even, as Python does. */
export function msToMicros(ms) {
  const value = ms * 1000;
  const rounded = Math.round(value);
  return Math.abs(value % 1) === 0.5 && rounded % 2 !== 0 ? rounded - 1 : rounded;
}

export class SpanStore {
  constructor() {
    this.byId = new Map(); // span_id -> span, in the order they began (as SpanTree keeps them)
    this.version = 0; // bumped on every change, so views redraw only when needed
    this.changed = new Set(); // invocation ids changed since the last takeChanged()
    this.answers = 0; // model calls answered (or spans loaded): what changes a cost
    this.costed = -1; // the answers the spans' costs were summed at
    this.asked = new Map(); // call id -> arguments of a call a message made with no span
  }

  /** Spans as the API sends them (open ones too): they replace what the store had. */
  load(wires) {
    for (const span of wires) { // taken over as they are: times read, nothing copied
      span.start = micros(span.start);
      span.end = span.end === null ? null : micros(span.end);
      span.error ??= undefined;
      span.cost ??= null; // spans stored before they carried costs have none
      span.cached_input_tokens ??= null; // nor, before they carried it, the cached input
      span.callCost = callCostOf(span);
      this.answers += 1;
      this.byId.set(span.span_id, span);
      this.touch(span);
    }
  }

  observe(wire) {
    this.observeKind(wire);
    if (wire.ingested) this.ingested(wire);
  }

  /** SpanTree._ingested: the OpenTelemetry span it came from; a parent that arrived
   * after its children names, places and starts the agent span opened for it. */
  ingested(wire) {
    const span = this.byId.get(wire.span_id);
    if (!span) return;
    span.attributes.otel = wire.ingested;
    if (wire.type !== "agent_end" || !wire.started_at) return;
    Object.assign(span, { name: wire.author, author: wire.author, branch: wire.branch ?? null,
      parent_span_id: wire.parent_span_id ?? null });
    span.start = Math.min(span.start, micros(wire.started_at));
    this.touch(span);
  }

  observeKind(wire) {
    switch (wire.type) {
      case "agent_start":
        this.open(wire, "agent", wire.author, micros(wire.created_at));
        this.agent(wire);
        break;
      case "agent_end":
        this.close(wire, "ok");
        break;
      case "run_parked": // the execution stopped on a person: its agents' spans end here
        this.parked(wire);
        break;
      case "agent_message":
      case "memory_saved":
      case "compaction":
        this.model(wire);
        break;
      case "tool_response":
        this.toolResponse(wire);
        break;
      case "approval_request":
        this.open(wire, "human", "approval", micros(wire.created_at));
        this.approval(wire);
        break;
      case "approval_decision":
        this.approval(wire);
        this.close(wire, "ok");
        break;
      case "user_question":
        this.open(wire, "human", "question", micros(wire.created_at));
        this.question(wire);
        break;
      case "user_answer":
        this.question(wire);
        this.close(wire, wire.question?.answer ? "ok" : "error");
        break;
      case "run_paused": // a wait for whoever paused the run, until run_resumed
        this.open(wire, "human", "pause", micros(wire.created_at));
        break;
      case "run_resumed":
        this.close(wire, "ok");
        break;
      case "rate_limit_waiting": // a model call's wait for its rate limit, until rate_limit_wait
      case "rate_limit_wait":
        this.rateLimit(wire);
        break;
      case "model_retry":
        this.retry(wire);
        break;
      case "error":
        this.error(wire);
        break;
      case "policy_decision":
        this.policy(wire);
        break;
      default:
    }
  }

  /** SpanTree._rate_limit: a wait opened by rate_limit_waiting (or, in runs stored
   * before it, only the closing event's started_at) and closed by rate_limit_wait. */
  rateLimit(wire) {
    const span = this.open(wire, "wait", "rate_limit", micros(wire.started_at || wire.created_at));
    if (!span) return;
    span.attributes.text = (wire.parts || []).filter((p) => p.kind === "text").map((p) => p.text).join("");
    if (wire.type !== "rate_limit_wait") return;
    this.close(wire, wire.error ? "error" : "ok");
    if (wire.error) span.error = `${wire.error.code}: ${wire.error.message}`;
  }

  /** SpanTree.finish for one run (``invocationId``) that ended at ``atIso``. */
  finish(invocationId, atIso, error = null) {
    const at = micros(atIso);
    for (const span of this.byId.values()) {
      const parked = Boolean(span.attributes.parked) && error !== null; // never went on
      if (span.invocation_id !== invocationId || (span.end !== null && !parked)) continue;
      span.end = span.end ?? Math.max(at, span.start);
      span.status = error === null ? "ok" : "error";
      if (error !== null && span.error === undefined) span.error = error;
      this.touch(span);
    }
  }

  /** The spans of one run (or all), in the order they began. */
  spans(invocationId = null) {
    this.sumCosts();
    const all = [...this.byId.values()];
    return invocationId === null ? all : all.filter((span) => span.invocation_id === invocationId);
  }

  get(spanId) {
    this.sumCosts();
    return this.byId.get(spanId) || null;
  }

  /** Each span's cost, summed again once a call was answered since they last were (a
   * span opened since costs nothing until a call beneath it is answered). */
  sumCosts() {
    if (this.costed === this.answers) return;
    rollUpCosts(this.byId);
    this.costed = this.answers;
  }

  /** The invocations changed since the last call. */
  takeChanged() {
    const changed = this.changed;
    this.changed = new Set();
    return changed;
  }

  touch(span) {
    this.version += 1;
    this.changed.add(span.invocation_id);
  }

  // Opening and closing

  open(wire, kind, name, start) {
    const spanId = wire.span_id;
    if (!spanId) return null; // an event from before spans (schema version 1, not upgraded)
    let span = this.byId.get(spanId);
    if (!span) {
      span = {
        span_id: spanId,
        parent_span_id: wire.parent_span_id ?? null,
        kind,
        name,
        author: wire.author,
        branch: wire.branch ?? null,
        invocation_id: wire.invocation_id,
        start,
        end: null,
        status: "open",
        start_seq: wire.seq ?? null,
        end_seq: null,
        input_tokens: null,
        cached_input_tokens: null,
        output_tokens: null,
        error: undefined,
        cost: null,
        attributes: {},
      };
      this.byId.set(spanId, span);
      this.touch(span);
    } else if (span.attributes.parked) { // it goes on after parking
      delete span.attributes.parked;
      span.attributes.resumed = true;
      span.end = null;
      span.end_seq = null;
      span.status = "open";
      this.touch(span);
    } else if (span.start_seq === null && (wire.seq ?? null) !== null) {
      span.start_seq = wire.seq;
      this.touch(span);
    }
    return span; // a model call's later streamed chunks change nothing: no redraw
  }

  parked(wire) {
    for (const span of this.byId.values()) {
      if (span.kind !== "agent" || span.end !== null || span.invocation_id !== wire.invocation_id) continue;
      span.end = Math.max(micros(wire.created_at), span.start);
      span.end_seq = wire.seq ?? null;
      span.status = "ok";
      span.attributes.parked = true;
      this.touch(span);
    }
  }

  close(wire, status, spanId = wire.span_id) {
    const span = this.byId.get(spanId || "");
    if (!span) return null;
    span.end = Math.max(micros(wire.created_at), span.start);
    span.end_seq = wire.seq ?? null;
    span.status = status;
    this.touch(span);
    return span;
  }

  // Kinds

  agent(wire) {
    const span = this.byId.get(wire.span_id || "");
    const branch = wire.branch || "";
    const last = branch.slice(branch.lastIndexOf(".") + 1);
    if (span && last.includes("@")) {
      const suffix = last.slice(last.lastIndexOf("@") + 1);
      if (/^[0-9]+$/.test(suffix)) span.attributes.iteration = Number(suffix);
    }
  }

  model(wire) {
    if (!wire.span_id) { // no model call: the agent retrying calls an interruption lost
      for (const part of (wire.parts || []).filter((p) => p.kind === "tool_call")) this.toolCall(wire, part);
      return;
    }
    const start = micros(wire.started_at || wire.created_at);
    const span = this.open(wire, "model", AFTER_TURN[wire.type] ?? "model", start);
    if (!span || wire.partial) return;
    span.start = start; // the call began before its first streamed chunk
    const parts = wire.parts || [];
    const texts = parts.filter((p) => p.kind === "text").map((p) => p.text ?? "");
    const text = texts.join(wire.type in AFTER_TURN ? "\n" : ""); // key facts a line each
    const calls = parts.filter((p) => p.kind === "tool_call");
    span.attributes.text = clip(text);
    span.attributes.tool_calls = calls.map((p) => p.name);
    const usage = wire.usage || {};
    span.input_tokens = usage.input_tokens ?? null;
    span.cached_input_tokens = usage.cached_input_tokens ?? null;
    span.output_tokens = usage.output_tokens ?? null;
    span.callCost = wire.cost ? { amount: wire.cost.amount, currency: wire.cost.currency } : null;
    this.answers += 1;
    this.close(wire, "ok");
    for (const part of calls) this.toolCall(wire, part);
  }

  toolCall(message, part) {
    if (!part.span_id) {
      this.asked.set(part.call_id, part.args ?? {}); // a later ingested tool span answers it
      return;
    }
    const opened = { ...message, span_id: part.span_id, parent_span_id: message.parent_span_id ?? null };
    const span = this.open(opened, "tool", part.name, micros(message.created_at));
    if (span) Object.assign(span.attributes, { call_id: part.call_id, arguments: part.args ?? {} });
    if (span && part.retry_of) span.attributes.retry_of = part.retry_of;
  }

  /** A tool span runs from the model's call to the response; within it, the tool itself
   * ran for ran_ms from ran_from (after any wait for approval). A call that its model's
   * message carried with no span (an ingested tool span sent in a later batch than its
   * model's) opens its span here, from when the tool started; an ingested tool span
   * starts then however it was opened (its OpenTelemetry span's times). */
  toolResponse(wire) {
    const part = (wire.parts || []).find((p) => p.kind === "tool_response") || null;
    if (part && wire.started_at && !this.byId.has(wire.span_id || "")) {
      const opened = this.open(wire, "tool", part.name, micros(wire.started_at));
      if (opened) opened.attributes.call_id = part.call_id;
      if (opened && this.asked.has(part.call_id)) { // as the model asked for it
        opened.attributes.arguments = this.asked.get(part.call_id);
        this.asked.delete(part.call_id);
      }
    }
    const result = part ? outcome(part) : "done";
    const span = this.close(wire, result === "done" ? "ok" : "error");
    if (!span) return;
    const ranFrom = wire.started_at;
    const ranMs = wire.latency_ms;
    if (ranFrom && ranMs !== null && ranMs !== undefined) {
      const from = micros(ranFrom);
      if (wire.ingested) span.start = from;
      span.end = Math.max(from + msToMicros(ranMs), span.start);
      Object.assign(span.attributes, { ran_from: isoOf(from), ran_ms: ranMs });
    }
    if (part) {
      span.attributes.result = clip(part.result);
      span.attributes.outcome = result;
      if (result !== "done") span.error = clip(part.result);
    }
    const transfer = (wire.actions || {}).transfer_to_agent;
    if (transfer) span.attributes.transfer_to = transfer;
  }

  approval(wire) {
    const span = this.byId.get(wire.span_id || "");
    const approval = wire.approval || {};
    if (!span) return;
    span.attributes.tool = approval.tool ?? null;
    for (const key of ["decision", "decided_by", "reason", "edited_args"]) {
      if (truthy(approval[key])) span.attributes[key] = approval[key];
    }
  }

  question(wire) {
    const span = this.byId.get(wire.span_id || "");
    const question = wire.question || {};
    if (!span) return;
    for (const key of ["question", "answer", "answered_by"]) {
      if (truthy(question[key])) span.attributes[key] = clip(question[key]);
    }
  }

  /** SpanTree._policy: a rule's decision on a tool or sub-agent call, on its span. */
  policy(wire) {
    const policy = wire.policy || {};
    const span = this.byId.get(wire.parent_span_id || "");
    if (!span || span.kind !== "tool" || policy.call_id === null || policy.call_id === undefined) return;
    const found = { rule: policy.rule ?? null, action: policy.action ?? null, reason: policy.reason ?? null };
    if (policy.rewritten_args !== null && policy.rewritten_args !== undefined) found.rewritten_args = policy.rewritten_args;
    span.attributes.policy = found;
    this.touch(span);
  }

  /** SpanTree._retry: a failed attempt of a model call that goes again opens the call's
   * span (drawn while it is retried) and counts the attempts, their errors and when each
   * failed. */
  retry(wire) {
    const error = wire.error || {};
    const call = this.open(wire, "model", "model", micros(wire.started_at || wire.created_at));
    if (!call || error.attempts === null || error.attempts === undefined) return;
    call.attributes.attempts = error.attempts + 1; // the one under way
    call.attributes.retries = [...(call.attributes.retries ?? []), `${pyStr(error.code)}: ${pyStr(error.message)}`];
    call.attributes.retried_at = [...(call.attributes.retried_at ?? []), wire.created_at];
    this.touch(call);
  }

  /** SpanTree._error: the error of a model call that failed for good carries that
   * call's span (a failed model span, an after-turn call's named as its own, each retry
   * in it); a terminal error fails the agent span it happened in. */
  error(wire) {
    const error = wire.error || {};
    const said = `${pyStr(error.code)}: ${pyStr(error.message)}`;
    if (wire.span_id && wire.started_at) {
      const after = Object.hasOwn(AFTER_TURN_FAILED, error.code);
      const name = after ? AFTER_TURN_FAILED[error.code] : "model";
      const call = this.open(wire, "model", name, micros(wire.started_at));
      if (call && this.close(wire, "error")) {
        call.error = said;
        call.attributes.attempts = error.attempts ?? null;
      }
    }
    const span = this.byId.get(wire.parent_span_id || "");
    const failure = "failure" in error ? error.failure : "terminal";
    if (!span || failure !== "terminal") return;
    span.error = said;
    span.status = "error";
    if (span.end === null) this.close(wire, "error", span.span_id);
    this.touch(span);
  }
}

/** A span as the API writes it (agents_core.spans.Span, mode="json"). */
export function toWire(span) {
  return {
    span_id: span.span_id,
    parent_span_id: span.parent_span_id,
    kind: span.kind,
    name: span.name,
    author: span.author,
    branch: span.branch,
    invocation_id: span.invocation_id,
    start: isoOf(span.start),
    end: span.end === null ? null : isoOf(span.end),
    status: span.status,
    start_seq: span.start_seq,
    end_seq: span.end_seq,
    input_tokens: span.input_tokens,
    cached_input_tokens: span.cached_input_tokens,
    output_tokens: span.output_tokens,
    error: span.error ?? null,
    cost: span.cost ?? null,
    attributes: span.attributes,
  };
}

function outcome(part) {
  if (!part.is_error) return "done";
  const text = pyStr(part.result ?? "");
  const colon = text.indexOf(":");
  const code = colon < 0 ? "" : text.slice(0, colon).trim();
  return colon >= 0 && IDENTIFIER.test(code) ? code : "error";
}

function clip(text) {
  if (typeof text !== "string" || text.length <= PREVIEW_CHARS) return text;
  const points = Array.from(text); // Python counts code points, not UTF-16 units
  return points.length > PREVIEW_CHARS ? `${points.slice(0, PREVIEW_CHARS).join("")}…` : text;
}

/** Python's truthiness: empty strings, lists and dicts are false. */
function truthy(value) {
  if (value === null || value === undefined || value === false || value === 0 || value === "") return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === "object") return Object.keys(value).length > 0;
  return true;
}

/** str(value) as Python writes None and booleans. */
function pyStr(value) {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  return String(value);
}
