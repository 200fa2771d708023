// A session as a chat: user and agent bubbles, compact tool calls paired with their
// results, approval cards, errors; streamed tokens grow a provisional bubble that the
// stored agent_message replaces. All text is written as text.

import { ApprovalCard } from "./approval.js";
import { h, richText } from "./dom.js";
import { clip, partsOf, provisionalKey, textOf } from "./events.js";

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
    this.pending = [];
    this.messages = 0;
  }

  /** The person's message, shown until its stored user_message arrives. */
  addPending(text) {
    const el = this.bubble("user pending", "You", text);
    this.pending.push(el);
    this.onChange();
  }

  add(event) {
    switch (event.type) {
      case "user_message":
        this.pending.shift()?.remove();
        this.bubble("user", "You", textOf(event), event);
        break;
      case "agent_message":
        this.dropProvisional(event);
        this.agentMessage(event);
        break;
      case "tool_response":
        this.toolResponse(event);
        break;
      case "approval_request": {
        const card = new ApprovalCard(event, this.sessionsUrl);
        this.approvals.set(`${event.invocation_id}|${event.approval.call_id}`, card);
        this.append(h("div", { class: "msg approval-msg", dataset: { seq: event.seq } }, h("span", { class: "who" }, event.author), card.el));
        break;
      }
      case "approval_decision":
        this.approvals.get(`${event.invocation_id}|${event.approval?.call_id}`)?.decided(event);
        break;
      case "error":
        this.dropProvisional(event);
        this.bubble("error", event.author, `${event.error?.code || "error"}: ${event.error?.message || ""}`, event);
        break;
      default:
        return;
    }
    this.onChange();
  }

  addPartial(event) {
    const key = provisionalKey(event);
    let el = this.provisional.get(key);
    if (!el) {
      el = this.bubble("agent provisional", event.author, "");
      this.provisional.set(key, el);
    }
    el.querySelector(".bubble").append(textOf(event));
    this.onChange();
  }

  dropProvisional(event) {
    const key = provisionalKey(event);
    this.provisional.get(key)?.remove();
    this.provisional.delete(key);
  }

  /** The run ended: streamed text with no stored message behind it goes away. */
  settle() {
    for (const el of this.provisional.values()) el.remove();
    this.provisional.clear();
    for (const card of this.approvals.values()) card.expired();
  }

  agentMessage(event) {
    const thinking = textOf(event, "thinking");
    if (thinking) {
      this.append(h("div", { class: "msg agent" }, h("details", { class: "thinking" }, h("summary", {}, `${event.author} is thinking`), thinking)));
    }
    const text = textOf(event);
    if (text) this.bubble("agent", event.author, text, event);
    for (const call of partsOf(event, "tool_call")) {
      const result = h("span", { class: "result" }, " …");
      const bubble = h("div", { class: "bubble" }, "⚙ ", call.name, " ", clip(JSON.stringify(call.args ?? {}), ARGS_PREVIEW_CHARS), result);
      this.calls.set(`${event.invocation_id}|${call.call_id}`, { bubble, result });
      this.append(h("div", { class: "msg tool", dataset: { callId: call.call_id, tool: call.name } }, bubble));
    }
  }

  toolResponse(event) {
    for (const part of partsOf(event, "tool_response")) {
      const call = this.calls.get(`${event.invocation_id}|${part.call_id}`);
      if (!call) continue;
      call.result.textContent = ` → ${part.result}`;
      call.bubble.classList.toggle("is-error", part.is_error);
    }
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
