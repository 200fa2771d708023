// A question the agent asked the user (a user_question event): the question, a box for
// the answer and a Send button. The answer goes to POST /api/sessions/<id>/answers/,
// bound to the call id and the hash of the question shown; the user_answer event then
// says who answered what, or that nobody did in time. Everything is written as text.

import { api } from "./api.js";
import { endingText } from "./calls.js";
import { countdown } from "./deadline.js";
import { h } from "./dom.js";

/** What a user_answer event says, in words. */
export function answerText(question) {
  if (!question?.answer) return "Nobody answered in time; the agent was told so.";
  return `${question.answered_by || "The user"} answered: ${question.answer}`;
}

export class QuestionCard {
  /** @param {object} event a user_question event  @param {string} sessionsUrl */
  constructor(event, sessionsUrl) {
    this.question = event.question;
    this.url = `${sessionsUrl}${encodeURIComponent(event.session_id)}/answers/`;
    this.status = h("p", { class: "hint", role: "status" });
    this.input = h("textarea", { rows: 2, class: "answer", "aria-label": "Your answer", placeholder: "Type your answer",
      onkeydown: (e) => {
        if (e.key === "Enter" && !e.shiftKey) {
          e.preventDefault();
          this.send();
        }
      } });
    this.button = h("button", { type: "button", class: "btn small primary", dataset: { action: "answer" }, onclick: () => this.send() }, "Send answer");
    this.form = h("div", { class: "row answer-row" }, this.input, this.button);
    this.title = h("span", {}, "The agent asks you");
    // Until it is answered: how long the agent waits before it goes on without.
    this.expires = countdown(event.created_at, this.question.timeout_s);
    this.el = h("div", { class: "approval question", dataset: { callId: this.question.call_id } },
      h("h4", {}, this.title, this.expires ? h("span", { class: "hint" }, " · ", this.expires) : null),
      h("p", { class: "question-text" }, this.question.question),
      this.form,
      this.status);
  }

  async send() {
    const text = this.input.value.trim();
    if (!text) {
      this.status.textContent = "Type an answer first.";
      this.input.focus();
      return;
    }
    this.setBusy(true);
    this.status.textContent = "Sending…";
    try {
      await api(this.url, { method: "POST", body: { call_id: this.question.call_id, args_hash: this.question.args_hash, text } });
      if (!this.isDecided) this.status.textContent = "Sent; the agent goes on.";
    } catch (error) {
      if (this.isDecided) return;
      this.status.textContent = error.message;
      this.setBusy(false);
    }
  }

  setBusy(busy) {
    this.button.disabled = busy;
    this.input.disabled = busy;
  }

  get isDecided() {
    return this.el.classList.contains("decided");
  }

  /** Whether it still takes an answer: not answered, and its run has not ended. */
  get isOpen() {
    return !this.isDecided && !this.el.classList.contains("expired");
  }

  /** Answer with ``text``, as if it were typed in the card's own box. */
  answer(text) {
    this.input.value = text;
    return this.send();
  }

  /** The user_answer event arrived. */
  decided(event) {
    this.el.classList.add("decided");
    this.close("The agent asked you");
    this.status.textContent = answerText(event.question);
  }

  /** The run ended before an answer: no more box, and how it ended. */
  expired(run) {
    if (this.isDecided) return;
    this.el.classList.add("expired");
    this.close("Question not answered");
    this.status.textContent = endingText(run);
  }

  close(title) {
    this.title.textContent = title;
    this.expires?.parentElement?.remove();
    this.form.remove();
  }
}
