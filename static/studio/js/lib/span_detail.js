// The detail of one span, for the waterfall's side panel: when it ran and for how long,
// what went in and came out (a model's input is what its agent last gave it: the
// request, or its previous call's tool results), a tool's arguments and result, tokens,
// a wait's decision, what its model calls cost, the error; and links to the events that opened and closed it in
// the timeline. Everything is written as text.

import { h, pretty } from "./dom.js";
import { CUT_OFF_CODES } from "./events.js";
import { formatDuration, formatTime, formatTokens } from "./ui.js";
import { costText } from "./span_costs.js";
import { decisionFacts, decisionSections } from "./span_decisions.js";
import { isoOf } from "./spans.js";
import { transferOf } from "./waterfall_layout.js";

const KIND_LABELS = { agent: "Agent run", model: "Model call", tool: "Tool call", human: "Waiting for a person" };

/** The panel's content for ``span`` (a lib/spans.js record) of ``run``. */
export function spanDetail(span, { tree, run, now, timelineUrl, actions }) {
  const end = span.end ?? now;
  const start = tree.roots.reduce((first, root) => Math.min(first, root.start), span.start);
  const facts = [
    ["Agent", span.author],
    ["Branch", span.branch || "—"],
    ["Started", `+${formatDuration((span.start - start) / 1000)} · ${formatTime(isoOf(span.start))}`],
    [span.end === null ? "Running for" : "Took", formatDuration((end - span.start) / 1000)],
    ...kindFacts(span, end),
  ];
  if (span.cost) facts.push(["Cost", costFact(span)]);
  if (span.error) facts.push(["Error", span.error]);
  return h("div", { class: "wf-detail-body", dataset: { span: span.span_id, kind: span.kind } },
    h("p", { class: "wf-detail-kind" }, KIND_LABELS[span.kind] || span.kind),
    h("h2", {}, span.kind === "model" ? `Model call of ${span.author}` : span.name,
      h("span", { class: `badge ${badgeOf(span)}` }, span.status === "open" ? "running" : span.status)),
    h("dl", { class: "wf-facts" }, facts.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
    ...sections(span, tree, run),
    span.attributes.otel ? otelSection(span.attributes.otel) : null,
    links(span, timelineUrl, actions));
}

/** "$0.0012", or for the spans above model calls "≥ $0.0031 · 3 model calls, 1 of
 * unknown cost". */
function costFact(span) {
  const cost = span.cost;
  const unknown = cost.unknown && cost.amount !== null ? `, ${cost.unknown} of unknown cost` : "";
  const calls = span.kind === "model" ? "" : ` · ${cost.calls} model call${cost.calls === 1 ? "" : "s"}${unknown}`;
  return h("span", { class: "wf-cost", dataset: { cost: cost.amount ?? "", complete: String(cost.complete) } },
    `${costText(cost)}${calls}`);
}

function badgeOf(span) {
  if (span.status === "open") return "running";
  return span.status === "error" ? "error" : "ok";
}

function kindFacts(span, end) {
  const a = span.attributes;
  switch (span.kind) {
    case "model": {
      const facts = [["Tokens", formatTokens(span.input_tokens, span.output_tokens, span.cached_input_tokens || 0)]];
      // a call that was retried or failed for good: how many times it was tried
      if (a.attempts !== undefined && a.attempts !== null) facts.push(["Attempts", String(a.attempts)]);
      return facts;
    }
    case "tool": {
      const facts = [["Outcome", a.outcome ?? (span.end === null ? "running" : "—")]];
      if (a.ran_ms !== undefined) facts.push(["Ran", formatDuration(a.ran_ms)]);
      const waited = (end - span.start) / 1000 - (a.ran_ms ?? 0);
      if (a.ran_ms !== undefined && waited >= 1) facts.push(["Waited to run", formatDuration(waited)]);
      return [...facts, ...decisionFacts(span)];
    }
    case "wait":
      return [["Waited for", "the model's rate limit"], ["State", span.end === null ? "waiting" : span.status]];
    case "human": {
      const decided = decisionFacts(span);
      if (span.name !== "approval") return a.answered_by ? [["Answered by", a.answered_by]] : [];
      return [["Tool", a.tool ?? "—"], ...(decided.length ? decided : [["Decision", span.end === null ? "waiting" : "none"]])];
    }
    default:
      return [];
  }
}

function sections(span, tree, run) {
  const a = span.attributes;
  switch (span.kind) {
    case "agent":
      return [section("Input", agentInput(span, tree, run)), section("Output", agentOutput(span, tree))];
    case "model":
      return [
        section("Input", modelInput(span, tree, run)),
        section("Output", a.text || (span.end === null ? "(no answer yet: the call is in flight)" : span.status === "error" ? `(no answer: the call ${CUT_OFF_CODES.has(span.error?.split(":")[0]) ? "was cut off" : "failed"})` : "(no text)")),
        a.tool_calls?.length ? section("Tool calls", a.tool_calls.join(", ")) : null,
        a.retries?.length ? section("Retried after", a.retries.map((said, i) => `attempt ${i + 1}: ${said}`).join("\n")) : null,
      ];
    case "tool":
      return [
        section("Arguments", pretty(a.arguments ?? {})),
        section("Result", a.result ?? (span.end === null ? "(running…)" : "—")),
        ...decisionSections(span, tree).map(([title, text]) => section(title, text)),
        a.transfer_to ? section("Handed over to", a.transfer_to) : null,
      ];
    case "wait":
      return [section("Wait", a.text || "")];
    case "human":
      return decisionSections(span, tree).map(([title, text]) => section(title, text));
    default:
      return [];
  }
}

/** An ingested span's OpenTelemetry name, kind, status and every attribute, as sent. */
function otelSection(otel) {
  const shown = { span: otel.name, kind: otel.kind, status: otel.status || "unset", trace_id: otel.trace_id,
    span_id: otel.span_id, attributes: otel.attributes, resource: otel.resource };
  return h("section", { class: "wf-io", dataset: { testid: "otel-attributes" } },
    h("h3", {}, "OpenTelemetry span"), h("pre", { class: "wf-text" }, pretty(shown)));
}

function section(title, text) {
  return h("section", { class: "wf-io" }, h("h3", {}, title), h("pre", { class: "wf-text" }, String(text ?? "")));
}

/** What an agent was asked: the run's message, or, run as a tool, its call's request. */
function agentInput(agent, tree, run) {
  const parent = tree.byId.get(agent.parent_span_id);
  if (parent?.kind === "tool") {
    const request = parent.attributes.arguments?.request;
    return request ?? pretty(parent.attributes.arguments ?? {});
  }
  if (transferOf(agent, tree)) return `Handed over by ${parent.author}. The run began with: ${run?.message ?? ""}`;
  return run?.message ?? "";
}

function agentOutput(agent, tree) {
  const models = (tree.children.get(agent.span_id) || []).filter((s) => s.kind === "model" && s.attributes.text);
  const last = models[models.length - 1];
  if (last) return last.attributes.text;
  return agent.end === null ? "(running…)" : "(no answer of its own)";
}

/** What a model call was given last: its agent's input for the first call, else the
 * results of the tools its previous call asked for. */
function modelInput(model, tree, run) {
  const agent = tree.byId.get(model.parent_span_id);
  const siblings = agent ? tree.children.get(agent.span_id) || [] : [];
  const models = siblings.filter((s) => s.kind === "model");
  const previous = models[models.indexOf(model) - 1];
  if (!previous) return agent ? agentInput(agent, tree, run) : run?.message ?? "";
  const tools = siblings.filter((s) => s.kind === "tool" && s.start_seq !== null && s.start_seq === previous.end_seq);
  if (!tools.length) return previous.attributes.text || "";
  return tools.map((tool) => `${tool.name} → ${tool.attributes.result ?? "(no result yet)"}`).join("\n");
}

function links(span, timelineUrl, actions) {
  const seqLink = (seq, label) => h("a", { href: `${timelineUrl}?seq=${seq}`, dataset: { seq } }, `${label} #${seq}`);
  return h("div", { class: "wf-detail-links" },
    h("p", { class: "hint" }, "Events in the timeline: ",
      span.start_seq !== null ? seqLink(span.start_seq, "opened at") : "opened by a streamed chunk",
      span.end_seq !== null && span.end_seq !== span.start_seq ? [" · ", seqLink(span.end_seq, "closed at")] : null),
    h("div", { class: "row" },
      h("button", { type: "button", class: "btn small", onclick: actions.zoom }, "Zoom to span"),
      span.parent_span_id ? h("button", { type: "button", class: "btn small", onclick: actions.parent }, "Parent") : null,
      h("button", { type: "button", class: "btn small ghost", onclick: actions.close }, "Close")));
}
