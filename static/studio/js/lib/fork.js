// Forking from the timeline: a "Fork here" button on each stored event's row, an
// "edited" mark on a fork point the user changed, and the small form that forks the
// session at a step (editing what that step says) and goes on live in the fork.
// Everything from the server is written as text.

import { api } from "./api.js";
import { h } from "./dom.js";

/** Fork points a fork goes on from without a new message: the model answers them next. */
const RESUMABLE = new Set(["user_message", "tool_response"]);
const LABELS = { user_message: "Your message", tool_response: "Result of", agent_message: "The model's reply" };

/** The "Fork here" button of a stored event's row. */
export function forkButton(event) {
  if (!event.seq) return null;
  return h("button", { type: "button", class: "fork-here", dataset: { forkSeq: event.seq }, title: `Fork this session at #${event.seq}` }, "Fork here");
}

/** A chip saying the user changed this step in a fork, with what it said before. */
export function editedMark(event) {
  if (!event.edited) return null;
  return h("span", { class: "chip edited", title: `edited in this fork; it was: ${event.edited.original}` }, "edited");
}

/** What a fork point says that the form can edit: its text (a user message, a reply
 * without tool calls) or its first tool result; null when nothing. */
function editable(event) {
  const parts = event.parts || [];
  if (event.type === "tool_response") {
    const part = parts.find((p) => p.kind === "tool_response");
    return part ? { label: `${LABELS.tool_response} ${part.name}`, text: part.result, callId: part.call_id } : null;
  }
  if (event.type === "agent_message" && parts.some((p) => p.kind === "tool_call")) return null;
  if (event.type !== "user_message" && event.type !== "agent_message") return null;
  return { label: LABELS[event.type], text: parts.filter((p) => p.kind === "text").map((p) => p.text).join(""), callId: null };
}

/** Open the fork form for ``event``; on success the browser goes to the fork's page. */
export function openForkForm(event, { forksUrl, timelineUrl, versions }) {
  const target = editable(event);
  const resumable = RESUMABLE.has(event.type);
  const edit = target ? h("textarea", { id: "fork-edit", name: "edit", rows: 4 }) : null;
  if (edit) edit.value = target.text;
  const version = h("select", { id: "fork-version", name: "agent_version" },
    versions.map((v) => h("option", { value: v.number, selected: v.current }, `v${v.number}${v.note ? ` · ${v.note}` : ""}${v.current ? " (this session's)" : ""}`)));
  const message = h("textarea", { id: "fork-message", name: "message", rows: 2,
    placeholder: resumable ? "Optional: leave empty to go on from this step" : "What the agent answers next" });
  const error = h("p", { class: "error", role: "alert", hidden: true });
  const submit = (goOn) => async () => {
    const body = { seq: event.seq, go_on: goOn, message: message.value.trim() };
    if (edit && edit.value !== target.text) {
      body.edit = edit.value;
      if (target.callId) body.call_id = target.callId;
    }
    if (version.value) body.agent_version = Number(version.value);
    if (goOn && !resumable && !body.message) {
      error.hidden = false;
      error.textContent = "Write a message to go on from here: the model's reply ends its turn.";
      return;
    }
    for (const button of dialog.querySelectorAll("button")) button.disabled = true;
    try {
      const forked = await api(forksUrl, { method: "POST", body });
      window.location.assign(`${timelineUrl}${forked.session.id}/`);
    } catch (failure) {
      error.hidden = false;
      error.textContent = failure.errors?.[0]?.detail || failure.message;
      for (const button of dialog.querySelectorAll("button")) button.disabled = false;
    }
  };
  const dialog = h("dialog", { class: "fork-dialog", "aria-label": `Fork at #${event.seq}` },
    h("div", { class: "fork-form" },
      h("h2", {}, `Fork at #${event.seq}`),
      h("p", { class: "muted" }, "A new session with this one's events up to this step and the state they made. Change what this step says, then go on live."),
      edit ? h("label", { for: "fork-edit" }, target.label) : null, edit,
      versions.length ? h("label", { for: "fork-version" }, "Agent version") : null, versions.length ? version : null,
      h("label", { for: "fork-message" }, resumable ? "New message (optional)" : "New message"), message,
      error,
      h("div", { class: "actions" },
        h("button", { type: "button", class: "btn", onclick: () => dialog.close() }, "Cancel"),
        h("button", { type: "button", class: "btn", id: "fork-only", onclick: submit(false) }, "Fork only"),
        h("button", { type: "button", class: "btn primary", id: "fork-continue", onclick: submit(true) }, "Fork and continue"))));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  (edit || message).focus();
}
