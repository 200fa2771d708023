// Reading the Event wire JSON (agents_core.events.Event) the API and websocket send.

import { h, pretty } from "./dom.js";
import { formatDuration } from "./ui.js";

export function partsOf(event, kind) {
  return (event.parts || []).filter((part) => part.kind === kind);
}

/** The concatenated text parts (or thinking parts) of an event. */
export function textOf(event, kind = "text") {
  return partsOf(event, kind).map((part) => part.text).join("");
}

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
    chips.push(h("span", { class: "chip", title: "tokens in / out" }, `${event.usage.input_tokens}↓ ${event.usage.output_tokens}↑ tok`));
  }
  if (event.latency_ms !== null && event.latency_ms !== undefined) {
    chips.push(h("span", { class: "chip", title: "latency" }, formatDuration(event.latency_ms)));
  }
  return chips.length ? h("span", { class: "figures" }, chips) : null;
}

/** The state changes an event applies, collapsed (null when none). */
export function stateDelta(event) {
  const delta = event.actions?.state_delta || {};
  const keys = Object.keys(delta);
  if (!keys.length) return null;
  return h("details", { class: "delta" }, h("summary", {}, `state: ${keys.join(", ")}`), h("pre", {}, pretty(delta)));
}
