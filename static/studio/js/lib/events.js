// Reading the Event wire JSON (agents_core.events.Event) the API and websocket send.

import { h, pretty } from "./dom.js";
import { formatCost, formatDuration, formatTokens } from "./ui.js";

export function partsOf(event, kind) {
  return (event.parts || []).filter((part) => part.kind === kind);
}

/** The concatenated text parts (or thinking parts) of an event. */
export function textOf(event, kind = "text") {
  return partsOf(event, kind).map((part) => part.text).join("");
}

/** The error codes of a model call cut off before it answered, as its run was cancelled
 * or ran out of time (agents_core._step_loop.CUT_OFF; a call made once the agent is
 * done, agents_core.span_contract.KEY_FACTS_CUT_OFF and SUMMARY_CUT_OFF): not fatal of itself,
 * the run's own terminal error follows. */
export const CUT_OFF_CODES = new Set(["model_call_cut_off", "key_facts_cut_off", "summary_cut_off"]);

/** Whether ``event`` is a model call slow to answer showing itself: a partial event
 * without parts, on the call's span (agents_core._step_loop._show, agents_core.after_turn). */
export function showsCall(event) {
  return Boolean(event.partial) && !(event.parts || []).length;
}

/** What the agent is doing while a call it makes once its turn is done shows itself
 * (agents_core.after_turn): the key facts it saves, the summary of a long session. */
export const AFTER_TURN_CALLING = { memory_saved: "saving the turn's key facts", compaction: "summarising the session" };

/** Streamed chunks of one agent's answer share this key until the stored message lands. */
export function provisionalKey(event) {
  return `${event.invocation_id}|${event.branch || ""}|${event.author}`;
}

export function clip(text, chars) {
  return text.length > chars ? `${text.slice(0, chars - 1)}…` : text;
}

/** Token and latency chips of a model call or tool response (null when it has none). */
export function figures(event) {
  const chips = [];
  if (event.usage) {
    const { input_tokens: input, output_tokens: output, cached_input_tokens: cached } = event.usage;
    chips.push(h("span", { class: "chip", title: "tokens in / out" }, `${formatTokens(input, output, cached)} tokens`));
    const thought = event.usage.reasoning_tokens;
    if (thought > 0) {
      chips.push(h("span", { class: "chip", title: "of the output tokens, spent thinking", dataset: { reasoning: thought } }, `${thought} thinking`));
    }
  }
  if (event.cost) {
    const title = "what this model call cost, at its model's price when it was stored";
    chips.push(h("span", { class: "chip", title, dataset: { cost: event.cost.amount } }, formatCost(event.cost.amount, event.cost.currency)));
  }
  if (event.latency_ms !== null && event.latency_ms !== undefined) {
    chips.push(h("span", { class: "chip", title: "latency" }, formatDuration(event.latency_ms)));
  }
  const attempts = event.type === "error" ? event.error?.attempts : null; // a retry's are in its text
  if (attempts !== null && attempts !== undefined) {
    const title = "the failed model call's attempts, retries included";
    chips.push(h("span", { class: "chip", title, dataset: { attempts } }, plural(attempts, "attempt")));
  }
  return chips.length ? h("span", { class: "figures" }, chips) : null;
}

/** How a model call that failed for good was tried: "after 4 attempts in 6.4 s" (empty
 * for any other error). */
export function attemptsText(event) {
  const attempts = event.error?.attempts;
  if (attempts === null || attempts === undefined) return "";
  const took = event.latency_ms === null || event.latency_ms === undefined ? "" : ` in ${formatDuration(event.latency_ms)}`;
  return `after ${plural(attempts, "attempt")}${took}`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** The state changes an event applies, collapsed (null when none). */
export function stateDelta(event) {
  const delta = event.actions?.state_delta || {};
  const keys = Object.keys(delta);
  if (!keys.length) return null;
  return h("details", { class: "delta" }, h("summary", {}, `state: ${keys.join(", ")}`), h("pre", {}, pretty(delta)));
}

/** The artifacts a tool call saved ("saved report.md v2"), as chips (null when none).
 * Text only: artifact names come from agents. */
export function artifactMarks(event) {
  const saved = Object.entries(event.actions?.artifact_delta || {});
  if (!saved.length) return null;
  return h("span", { class: "artifacts-saved" }, saved.map(([name, version]) => h("span", {
    class: "chip artifact", dataset: { artifact: name, version }, title: "an artifact this call saved (see Artifacts)",
  }, `saved ${name} v${version}`)));
}

const HOOK_EFFECTS = { rewrote: "rewrote", short_circuited: "answered instead", recovered: "recovered" };
const HOOK_STAGES = {
  before_model: "the request", after_model: "the answer", on_model_error: "the failed call",
  before_tool: "the call", after_tool: "the result",
};

/** A chip for each hook that changed this model or tool call (null when none). */
export function hookMarks(event) {
  const hooks = event.hooks || [];
  if (!hooks.length) return null;
  return h("span", { class: "hooks" }, hooks.map((note) => h("span", {
    class: "chip hook", dataset: { hook: note.hook, effect: note.effect },
    title: `hook ${note.hook} ${HOOK_EFFECTS[note.effect] || note.effect} (${HOOK_STAGES[note.stage] || note.stage})`,
  }, `⚓ ${note.hook}: ${HOOK_EFFECTS[note.effect] || note.effect}`)));
}

/** Which model of its agent's chain answered, and whether from the response cache,
 * as chips (null when the event says neither). Text only: names come from users. */
export function routeMarks(event) {
  const chips = [];
  if (event.model) chips.push(h("span", { class: "chip model", title: "the model that answered" }, `model: ${event.model}`));
  // An answer no model made: the response cache's, or one a replay played back.
  const free = event.cached ? ["cached", "answered from the response cache"]
    : event.replayed ? ["replayed", "played back from the run this replays"] : null;
  if (free) chips.push(h("span", { class: "chip cached", title: `${free[1]}: no model was called, it cost nothing` }, free[0]));
  return chips.length ? h("span", { class: "route" }, chips) : null;
}

/** A switch to the next model of an agent's chain, in words. */
export function fallbackText(event) {
  const fallback = event.fallback;
  if (!fallback) return textOf(event);
  const why = fallback.reason ? `: ${fallback.reason}` : "";
  return `${fallback.from_model} failed (${fallback.code}${why}); the call moves to ${fallback.to_model}`;
}

/** A model_retry's line: "Attempt 1 of 4 failed; trying again in 0.5 s. (model_server_error:
 * …)" (a chain's model, when it has several, is the event's route mark). */
export function retryText(event) {
  const why = event.error ? ` (${event.error.code}: ${event.error.message})` : "";
  return `${textOf(event)}${why}`;
}

/** The failure a degrade policy let the run go past, as a chip (null when none). */
export function degradedMark(event) {
  if (!event.error?.degraded) return null;
  return h("span", { class: "chip degraded", title: "the run goes on and ends degraded" }, "degrades the run");
}

/** An answer parsed against its agent's output schema, as formatted JSON (null when none). */
export function structuredBlock(event) {
  const part = partsOf(event, "structured")[0];
  if (!part) return null;
  return h("div", { class: "structured" }, h("p", { class: "label" }, "Structured output"), h("pre", {}, pretty(part.value)));
}

const POLICY_VERBS = { allow: "allowed", deny: "denied", rewrite: "rewrote", ask: "asked a person about" };

/** A policy decision in words: which rule did what to which call, and why. */
export function policyLine(event) {
  const policy = event.policy || {};
  const call = policy.target === "model"
    ? "a model call"
    : policy.target === "agent" ? `a call of the agent ${policy.subject}` : `a call of ${policy.subject}`;
  const why = policy.reason ? `: ${policy.reason}` : "";
  return `Rule ${policy.rule} ${POLICY_VERBS[policy.action] || policy.action} ${call}${why}`;
}

/** The timeline's body of a policy decision: the line, and a rewrite's arguments. */
export function policyBlock(event) {
  const policy = event.policy || {};
  const rewritten = policy.rewritten_args
    ? h("details", { class: "rewritten" }, h("summary", {}, "Arguments before and after"),
      h("pre", {}, `proposed: ${pretty(policy.args)}\nran with: ${pretty(policy.rewritten_args)}`))
    : null;
  return h("div", { class: "text" }, policyLine(event), rewritten);
}

const BLOB_ID = /^[0-9a-f]{64}$/;
const FILES_URL = "/files/";

/** The files attached to a (user) message: images shown from Studio's owner-only file
 * view, other files as download links. Names are text; ids are checked to be SHA-256s.
 * An image whose bytes this Studio does not have (a run bundle that did not carry them,
 * a file swept) says so in place of a broken picture. */
export function attachments(event) {
  const files = partsOf(event, "file").filter((part) => BLOB_ID.test(part.blob_id || ""));
  if (!files.length) return null;
  return h("div", { class: "attachments" }, files.map((file) => {
    const url = `${FILES_URL}${file.blob_id}/`;
    const label = `${file.name || "file"} · ${formatBytes(file.size)}`;
    if (String(file.content_type).startsWith("image/")) {
      return h("figure", { class: "attachment", dataset: { blob: file.blob_id } },
        h("img", { src: url, alt: file.name || "attached image", loading: "lazy", onerror: notHere }),
        h("figcaption", {}, label));
    }
    return h("a", { class: "attachment", href: url, download: file.name || "", dataset: { blob: file.blob_id } }, label);
  }));
}

function notHere(event) {
  event.target.replaceWith(h("span", { class: "attachment-missing" }, "Not stored in this Studio"));
}

function formatBytes(size) {
  if (!Number.isFinite(size)) return "";
  if (size < 1024) return `${size} B`;
  return size < 1024 * 1024 ? `${(size / 1024).toFixed(1)} KB` : `${(size / 1024 / 1024).toFixed(1)} MB`;
}
