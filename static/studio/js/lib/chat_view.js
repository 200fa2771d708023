// A session as a chat: user and agent bubbles, compact tool calls paired with their
// results, approval cards, errors; streamed tokens grow a provisional bubble that the
// stored agent_message replaces. All text is written as text.

import { ApprovalCard } from "./approval.js";
import { QuestionCard } from "./question.js";
import { OUTCOMES, outcomeOf, unansweredOutcome } from "./calls.js";
import { h, pretty, richText } from "./dom.js";
import { AFTER_TURN_CALLING, attachments, attemptsText, clip, fallbackText, partsOf, policyLine, provisionalKey, retryText, showsCall, textOf } from "./events.js";

const ARGS_PREVIEW_CHARS = 80;

export class ChatView {
  constructor(root, { sessionsUrl, onChange }) {
    this.root = root;
    this.sessionsUrl = sessionsUrl;
    this.onChange = onChange || (() => {});
    this.reset();
  }

  reset() {
    for (const el of this.root.querySelectorAll(".msg")) el.remove();
    this.calls = new Map();
    this.approvals = new Map();
    this.provisional = new Map();
    this.retries = new Map(); // model call span -> its one Retry line
    this.pending = [];
    this.messages = 0;
    this.afterTurn = null; // what a call made once the turn is done is doing, while it shows itself
  }

  /** The person's message, shown until its stored user_message arrives. */
  addPending(text) {
    const el = this.bubble("user pending", "You", text);
    this.pending.push(el);
    this.onChange();
  }

  add(event) {
    if (this.afterTurn && !event.partial) { // the call's record, or whatever came after it
      this.afterTurn = null;
      this.onChange();
    }
    switch (event.type) {
      case "user_message":
        this.pending.shift()?.remove();
        this.bubble("user", "You", textOf(event), event).querySelector(".bubble").append(attachments(event) || "");
        break;
      case "agent_message":
        this.dropProvisional(event);
        this.retried(event);
        this.agentMessage(event);
        break;
      case "tool_response":
        this.toolResponse(event);
        break;
      case "approval_request":
        this.approvalRequest(event);
        break;
      case "approval_decision":
        this.approvalDecision(event);
        break;
      case "user_question":
        this.userQuestion(event);
        break;
      case "user_answer":
        this.userAnswer(event);
        break;
      case "run_paused":
        this.bubble("policy paused", "Paused", textOf(event) || "paused", event);
        break;
      case "run_parked":
        this.bubble("policy paused", "Parked", "waiting for your decision; the run holds nothing until then", event);
        break;
      case "run_resumed":
        this.bubble("policy resumed", "Resumed", "the run goes on", event);
        break;
      case "policy_decision":
        this.bubble(`policy ${event.policy?.action || ""}`, "Policy", policyLine(event), event);
        break;
      case "model_fallback":
        this.bubble("policy fallback", "Fallback", fallbackText(event), event);
        break;
      case "model_retry": // the failed attempt's streamed text is provisional: the call starts again
        this.dropProvisional(event);
        this.retry(event);
        break;
      case "rate_limit_waiting":
        this.bubble("policy waiting", "Rate limit", textOf(event), event);
        break;
      case "rate_limit_wait":
        this.bubble("policy waited", "Rate limit", textOf(event), event);
        break;
      case "error":
        this.dropProvisional(event);
        this.retried(event); // its own line says how many attempts failed
        // A failure the run went past (non-fatal, degraded) is a warning, not the end.
        this.bubble((event.error?.failure ?? "terminal") === "terminal" ? "error" : "error went-on", event.author,
          [`${event.error?.code || "error"}: ${event.error?.message || ""}`, attemptsText(event)].filter(Boolean).join(" — "), event);
        break;
      default:
        return;
    }
    this.onChange();
  }

  /** A model call's retries share one line, kept current: its latest failure and when
   * the next attempt goes (the timeline keeps each). */
  retry(event) {
    let shown = this.retries.get(event.span_id);
    if (!shown) {
      shown = this.bubble("policy retry", "Retry", "", event);
      if (event.span_id) this.retries.set(event.span_id, shown);
    }
    Object.assign(shown.dataset, { seq: event.seq, failures: event.error?.attempts ?? 1,
      last: event.error ? `${event.error.code}: ${event.error.message}` : "" });
    shown.querySelector(".bubble").replaceChildren(richText(retryText(event)));
  }

  /** The call a retry line was about ended: answered, the line says at which attempt; failed
   * for good, the error's own line says it all and the retry line goes. */
  retried(event) {
    const shown = this.retries.get(event.span_id ?? "");
    if (!shown) return;
    this.retries.delete(event.span_id);
    if (event.type === "error") {
      shown.remove();
      this.messages -= 1;
      return;
    }
    const failures = Number(shown.dataset.failures);
    shown.className = "msg policy retried";
    shown.querySelector(".who").textContent = "Retried";
    shown.querySelector(".bubble").replaceChildren(
      `Answered at attempt ${failures + 1}, after ${failures} failed: ${shown.dataset.last}`);
  }

  addPartial(event) {
    if (showsCall(event)) { // the status line says the model is thinking, or what about
      this.afterTurn = AFTER_TURN_CALLING[event.type] ?? null;
      this.onChange();
      return;
    }
    const key = provisionalKey(event);
    let el = this.provisional.get(key);
    if (!el) {
      el = this.bubble("agent provisional", event.author, "");
      this.provisional.set(key, el);
    }
    const thinking = textOf(event, "thinking");
    if (thinking) this.liveThinking(el, event).append(thinking);
    el.querySelector(".bubble").append(textOf(event));
    this.onChange();
  }

  /** The folded thinking of a streaming answer, grown as it streams. */
  liveThinking(el, event) {
    let box = el.querySelector(".thinking .text");
    if (!box) {
      box = h("div", { class: "text" });
      el.querySelector(".bubble").before(h("details", { class: "thinking live" }, h("summary", {}, `${event.author} is thinking…`), box));
    }
    return box;
  }

  dropProvisional(event) {
    const key = provisionalKey(event);
    this.provisional.get(key)?.remove();
    this.provisional.delete(key);
  }

  /** ``run`` ended: streamed text with no stored message behind it goes away, calls
   * left without a result say what became of them, and undecided cards how it ended. */
  settle(run) {
    for (const el of this.provisional.values()) el.remove();
    this.provisional.clear();
    for (const call of this.calls.values()) {
      if (call.outcome !== null) continue;
      const awaited = call.card !== null && call.verdict !== "approve";
      this.setOutcome(call, unansweredOutcome(run, awaited));
    }
    for (const card of this.approvals.values()) card.expired(run);
  }

  agentMessage(event) {
    const thinking = textOf(event, "thinking");
    if (thinking) {
      this.append(h("div", { class: "msg agent" }, h("details", { class: "thinking" }, h("summary", {}, `${event.author} is thinking`), thinking)));
    }
    const structured = partsOf(event, "structured")[0];
    const text = structured ? pretty(structured.value) : textOf(event);
    if (text) this.bubble(structured ? "agent structured" : "agent", event.author, text, event);
    for (const call of partsOf(event, "tool_call")) {
      const state = h("span", { class: "state" }, " · running…");
      const args = h("span", { class: "args" }, clip(JSON.stringify(call.args ?? {}), ARGS_PREVIEW_CHARS));
      const result = h("span", { class: "result" });
      const retry = call.retry_of
        ? h("span", { class: "chip retry", title: `runs again call ${call.retry_of}, which the interruption stopped before it started` }, "retry")
        : null;
      const bubble = h("div", { class: "bubble" }, "⚙ ", call.name, " ", retry, args, result, state);
      const msg = h("div", { class: "msg tool", dataset: { callId: call.call_id, tool: call.name } }, bubble);
      this.calls.set(`${event.invocation_id}|${call.call_id}`, { name: call.name, proposed: call.args ?? {}, msg, bubble, args, result, state, card: null, verdict: null, outcome: null });
      this.append(msg);
    }
  }

  /** An approval card goes with its call, so its result comes after it. */
  approvalRequest(event) {
    this.awaitPerson(event, event.approval.call_id, new ApprovalCard(event, this.sessionsUrl), "waiting for approval");
  }

  /** A question of the agent's goes with its call, like an approval card. */
  userQuestion(event) {
    this.awaitPerson(event, event.question.call_id, new QuestionCard(event, this.sessionsUrl), "waiting for your answer");
  }

  /** The newest question of the agent's still waiting for an answer, or null. */
  openQuestion() {
    const open = [...this.approvals.values()].filter((card) => card instanceof QuestionCard && card.isOpen);
    return open.at(-1) ?? null;
  }

  /** A call waits for a person: their card joins the call (or stands alone). */
  awaitPerson(event, callId, card, waiting) {
    const key = `${event.invocation_id}|${callId}`;
    this.approvals.set(key, card);
    const call = this.calls.get(key);
    if (!call) {
      this.append(h("div", { class: "msg approval-msg", dataset: { seq: event.seq } }, h("span", { class: "who" }, event.author), card.el));
      return;
    }
    call.card = card;
    call.msg.append(card.el);
    call.state.textContent = ` · ${waiting}`;
  }

  userAnswer(event) {
    const q = event.question || {};
    const key = `${event.invocation_id}|${q.call_id}`;
    this.approvals.get(key)?.decided(event);
    const call = this.calls.get(key);
    if (!call) return;
    call.verdict = q.answer ? "approve" : null;
    if (call.outcome === null) call.state.textContent = " · running…";
  }

  approvalDecision(event) {
    const a = event.approval || {};
    const key = `${event.invocation_id}|${a.call_id}`;
    this.approvals.get(key)?.decided(event);
    const call = this.calls.get(key);
    if (!call) return;
    call.verdict = a.decision || null;
    if (a.edited_args) this.showEdited(call, a.edited_args);
    if (call.outcome === null) call.state.textContent = a.decision === "deny" ? " · denied" : " · running…";
  }

  /** The arguments a person approved instead of the proposed ones: the line shows what
   * ran, marked edited, and the proposed ones open below it, as in the timeline. */
  showEdited(call, edited) {
    call.args.textContent = clip(JSON.stringify(edited), ARGS_PREVIEW_CHARS);
    call.args.after(" ", h("span", { class: "chip edited", title: "a person edited the arguments before approving" }, "edited"));
    call.bubble.append(h("details", { class: "proposed" }, h("summary", {}, "Proposed arguments"), h("pre", {}, pretty(call.proposed))));
  }

  toolResponse(event) {
    for (const part of partsOf(event, "tool_response")) {
      const call = this.calls.get(`${event.invocation_id}|${part.call_id}`);
      if (!call) continue;
      const text = ` → ${part.result}`;
      if (call.card) call.msg.append(h("div", { class: "bubble result-line" }, `⚙ ${call.name}${text}`));
      else call.result.textContent = text;
      this.setOutcome(call, outcomeOf(part, call.verdict));
    }
  }

  setOutcome(call, outcome) {
    call.outcome = outcome;
    call.state.textContent = outcome === "done" ? "" : ` · ${OUTCOMES[outcome]}`;
    call.msg.dataset.outcome = outcome;
    call.bubble.classList.toggle("is-error", outcome === "error");
    call.bubble.classList.toggle("is-stopped", outcome !== "done" && outcome !== "error");
  }

  /** ``run`` goes on from an interrupted run, with no message of its own: said once,
   * linking to the interrupted run (``earlierHref``). */
  resumed(run, earlierHref) {
    if ([...this.root.querySelectorAll("[data-resumed-run]")].some((el) => el.dataset.resumedRun === run.id)) return;
    const from = `run ${run.resumed_from.slice(0, 8)}`;
    const el = h("div", { class: "msg policy resumed", dataset: { resumedRun: run.id } },
      h("span", { class: "who" }, "Resumed"),
      h("div", { class: "bubble" }, "Going on from ", earlierHref ? h("a", { href: earlierHref }, from) : from, " at its last completed step"));
    this.append(el);
    this.onChange();
  }

  bubble(kind, who, text, event) {
    const el = h("div", { class: `msg ${kind}`, dataset: event ? { seq: event.seq } : {} },
      h("span", { class: "who" }, who), h("div", { class: "bubble" }, richText(text)));
    this.append(el);
    if (!kind.includes("pending") && !kind.includes("provisional")) this.messages += 1;
    return el;
  }

  append(el) {
    this.root.append(el);
  }
}
