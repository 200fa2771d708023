// One tool call in the timeline, drawn in the order things happened to it: the
// arguments that ran (the proposed ones a click away when a person edited them), the
// approval card and its decision, then the result. Its state chip says where it is:
// waiting for approval, running, done (with its latency), denied, error, not run,
// cancelled or in doubt; hooks that changed it and a failure that degrades the run are
// marked beside it. Everything from the server is written as text.

import { h, pretty } from "./dom.js";
import { clip, degradedMark, hookMarks } from "./events.js";
import { OUTCOMES, outcomeOf, unansweredOutcome, verdictText } from "./calls.js";
import { formatDuration } from "./ui.js";

const PREVIEW_CHARS = 90;

export class ToolCallView {
  /** @param {{call_id: string, name: string, args: object}} call  @param {object|null} endedRun */
  constructor(call, endedRun = null) {
    this.call = call;
    this.card = null;
    this.verdict = null;
    this.outcome = null; // set once answered
    this.state = h("span", { class: "chip state" });
    this.outcomeEl = h("span", { class: "outcome" });
    this.preview = h("span", { class: "preview" }, preview(call.args));
    this.args = h("pre", {}, pretty(call.args));
    this.argsBox = h("div", { class: "args-box" }, h("p", { class: "label" }, "Arguments"), this.args);
    this.approvalSlot = h("div", { class: "approval-slot" });
    this.result = h("div", { class: "result" }, h("p", { class: "label" }, "Result"), h("p", { class: "hint" }, "Waiting for the result…"));
    this.summary = h("summary", {}, h("span", { class: "icon", "aria-hidden": "true" }, "⚙"),
      h("span", { class: "name" }, call.name), this.preview, this.outcomeEl, this.state);
    this.body = h("div", { class: "tool-body" }, this.argsBox, this.approvalSlot, this.result);
    this.el = h("details", { class: "tool pending", dataset: { callId: call.call_id, tool: call.name } }, this.summary, this.body);
    if (call.retry_of) {
      const why = `runs again call ${call.retry_of}, which the interruption stopped before it started`;
      this.summary.insertBefore(h("span", { class: "chip retry", title: why }, "retry"), this.outcomeEl);
      this.el.dataset.retryOf = call.retry_of;
    }
    if (endedRun) this.ended(endedRun);
    else this.setState("running…", "running");
  }

  setState(text, kind) {
    this.state.textContent = text;
    this.el.dataset.state = kind;
  }

  /** An approval_request for this call: its card joins the call, which opens. */
  awaitApproval(card, event) {
    this.card = card;
    this.approvalSlot.append(h("div", { class: "ev approval_request", dataset: { seq: event.seq, type: event.type } }, card.el));
    this.el.open = true;
    if (this.outcome !== null || this.isEnded) return;
    this.setState("waiting for approval", "waiting");
    this.result.querySelector(".hint").textContent = "It runs once a person approves it.";
  }

  /** A user_question this call asks: its card joins the call, which waits on the user. */
  awaitAnswer(card, event) {
    this.card = card;
    this.approvalSlot.append(h("div", { class: "ev user_question", dataset: { seq: event.seq, type: event.type } }, card.el));
    this.el.open = true;
    if (this.outcome !== null || this.isEnded) return;
    this.setState("waiting for your answer", "waiting");
    this.result.querySelector(".hint").textContent = "It goes on once you answer.";
  }

  /** The user_answer: the card's answer line stands for the event. */
  answerGiven(event) {
    this.card?.decided(event);
    this.verdict = event.question?.answer ? "approve" : null;
    const anchor = this.card?.status;
    if (anchor) Object.assign(anchor.dataset, { seq: event.seq, type: event.type });
    if (this.outcome === null && !this.isEnded) this.setState("running…", "running");
  }

  /** The approval_decision: the card's verdict line stands for the event. */
  decided(event) {
    const a = event.approval || {};
    this.verdict = a.decision || null;
    this.card?.decided(event);
    const anchor = this.card?.status;
    if (anchor) Object.assign(anchor.dataset, { seq: event.seq, type: event.type });
    else this.approvalSlot.append(h("p", { class: "hint", dataset: { seq: event.seq, type: event.type } }, verdictText(a)));
    if (a.edited_args) this.showEdited(a.edited_args);
    if (this.outcome !== null || this.isEnded) return;
    if (a.decision === "deny") this.setState("denied", "denied");
    else this.setState("running…", "running");
    const hint = this.result.querySelector(".hint");
    if (hint) hint.textContent = a.decision === "deny" ? "It does not run." : "Waiting for the result…";
  }

  /** The arguments a person approved instead of the proposed ones. */
  showEdited(edited) {
    this.preview.textContent = preview(edited);
    this.args.textContent = pretty(edited);
    this.summary.insertBefore(h("span", { class: "chip edited", title: "a person edited the arguments before approving" }, "edited"), this.outcomeEl);
    this.argsBox.firstChild.textContent = "Arguments (edited, as they ran)";
    this.argsBox.append(h("details", { class: "proposed" }, h("summary", {}, "Proposed arguments"), h("pre", {}, pretty(this.call.args))));
  }

  /** Its tool_response part arrived; ``attrs`` carry the event's seq on one result. */
  answered(part, event, attrs) {
    this.outcome = outcomeOf(part, this.verdict);
    const failed = this.outcome !== "done";
    this.result.replaceWith(this.result = h("div", { class: "result", dataset: attrs },
      h("p", { class: "label" }, failed ? OUTCOMES[this.outcome].replace(/^./, (c) => c.toUpperCase()) : "Result"),
      h("pre", {}, part.result)));
    this.el.classList.remove("pending");
    this.el.classList.toggle("is-error", this.outcome === "error");
    this.el.classList.toggle("is-stopped", failed && this.outcome !== "error");
    // The tag says how it ended; the preview says why, without repeating the code.
    const said = failed && this.outcome !== "error" ? part.result.replace(/^\s*\w+\s*:\s*/, "") : part.result;
    this.outcomeEl.textContent = `→ ${clip(said.replace(/\s+/g, " "), 48)}`;
    if (this.outcome === "error") this.el.open = true;
    const latency = event.latency_ms;
    const done = latency !== null && latency !== undefined ? formatDuration(latency) : "done";
    this.setState(this.outcome === "done" ? done : OUTCOMES[this.outcome], this.outcome);
    for (const mark of [hookMarks(event), degradedMark(event)]) if (mark) this.summary.insertBefore(mark, this.outcomeEl);
  }

  /** Its run ended: a call still without a response cannot be running any more. */
  ended(run) {
    this.isEnded = true;
    if (this.outcome !== null) return;
    const awaited = this.card !== null && this.verdict === null;
    const outcome = unansweredOutcome(run, awaited || this.verdict === "deny");
    this.el.classList.remove("pending");
    this.el.classList.add("is-stopped");
    this.setState(OUTCOMES[outcome], outcome);
    this.card?.expired(run);
  }
}

export function preview(args) {
  return clip(JSON.stringify(args ?? {}), PREVIEW_CHARS);
}
