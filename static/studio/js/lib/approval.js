// An approval request card: approve, approve with edited arguments, or deny with a
// reason. The decision goes to POST /api/sessions/<id>/approvals/ and is bound to the
// call id and the hash of the arguments the request showed.

import { api } from "./api.js";
import { endingText, verdictText } from "./calls.js";
import { countdown } from "./deadline.js";
import { h, pretty } from "./dom.js";

export class ApprovalCard {
  /**
   * @param {object} event an approval_request event  @param {string} sessionsUrl
   * @param {{embedded?: boolean}} options embedded: drawn inside its tool call, which
   *   shows the arguments (proposed and edited) itself
   */
  constructor(event, sessionsUrl, { embedded = false } = {}) {
    this.embedded = embedded;
    this.event = event;
    this.approval = event.approval;
    this.url = `${sessionsUrl}${encodeURIComponent(event.session_id)}/approvals/`;
    this.status = h("p", { class: "hint", role: "status" });
    this.editor = h("textarea", { class: "code", spellcheck: "false", "aria-label": "Edited arguments (JSON)", hidden: true });
    this.reason = h("input", { type: "text", placeholder: "Reason (optional, shown to the model on deny)", "aria-label": "Reason" });
    this.buttons = h("div", { class: "row" },
      h("button", { type: "button", class: "btn small primary", dataset: { action: "approve" }, onclick: () => this.approve() }, "Approve"),
      h("button", { type: "button", class: "btn small", dataset: { action: "edit" }, onclick: () => this.toggleEdit() }, "Edit arguments"),
      h("button", { type: "button", class: "btn small danger", dataset: { action: "deny" }, onclick: () => this.decide("deny") }, "Deny"));
    this.title = h("span", {}, "Approval needed: ");
    // Until it is decided: when its time-out decides it if nobody does.
    this.expires = countdown(event.created_at, this.approval.timeout_s, this.approval.on_timeout || "deny");
    this.el = h("div", { class: "approval", dataset: { callId: this.approval.call_id } },
      h("h4", {}, this.title, h("code", {}, this.approval.tool), embedded ? h("span", { class: "hint" }, " with the arguments above") : null,
        this.expires ? h("span", { class: "hint" }, " · ", this.expires) : null),
      embedded ? null : h("pre", { class: "args" }, pretty(this.approval.args)),
      this.editor,
      h("div", { class: "row" }, this.reason),
      this.buttons,
      this.status);
  }

  toggleEdit() {
    const editing = this.editor.hidden;
    this.editor.hidden = !editing;
    if (editing) {
      this.editor.value = pretty(this.approval.args);
      this.editor.focus();
    }
    this.buttons.querySelector('[data-action="approve"]').textContent = editing ? "Approve with edits" : "Approve";
  }

  approve() {
    if (this.editor.hidden) return this.decide("approve");
    let edited;
    try {
      edited = JSON.parse(this.editor.value);
    } catch (error) {
      this.status.textContent = `The arguments are not valid JSON: ${error.message}`;
      return undefined;
    }
    if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
      this.status.textContent = "The arguments must be a JSON object.";
      return undefined;
    }
    return this.decide("approve", edited);
  }

  async decide(decision, editedArgs) {
    const body = { call_id: this.approval.call_id, args_hash: this.approval.args_hash, decision };
    if (editedArgs) body.edited_args = editedArgs;
    if (this.reason.value.trim()) body.reason = this.reason.value.trim();
    this.setBusy(true);
    this.status.textContent = "Sending…";
    try {
      await api(this.url, { method: "POST", body });
      // The decision event may have arrived first and said more (who, why): keep that.
      if (!this.isDecided) this.status.textContent = decision === "approve" ? "Approved; the tool runs now." : "Denied.";
    } catch (error) {
      if (this.isDecided) return;
      this.status.textContent = error.message;
      this.setBusy(false);
    }
  }

  setBusy(busy) {
    for (const button of this.buttons.querySelectorAll("button")) button.disabled = busy;
    this.reason.disabled = busy;
    this.editor.disabled = busy;
  }

  get isDecided() {
    return this.el.classList.contains("decided");
  }

  /** The approval_decision event arrived. */
  decided(event) {
    const a = event.approval || {};
    this.el.classList.add("decided");
    this.el.dataset.decision = a.decision || "";
    this.close("Approval: ");
    this.status.textContent = verdictText(a);
    if (a.edited_args && !this.embedded) this.el.append(h("pre", { class: "args" }, pretty(a.edited_args)));
  }

  /** The run ended without a decision: no more buttons, and how it ended. */
  expired(run) {
    if (this.isDecided) return;
    this.el.classList.add("expired");
    this.close("Approval not given: ");
    this.status.textContent = endingText(run);
  }

  close(title) {
    this.title.textContent = title;
    for (const hint of this.el.querySelectorAll("h4 .hint")) hint.remove();
    this.buttons.remove();
    this.reason.parentElement?.remove();
    this.editor.remove();
  }
}
