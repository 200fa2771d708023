// Decisions on the waterfall: what was decided about a call, by whom or by what. An
// approval's wait (a "human" span) carries its verdict, who took it (a person by name,
// or the approval's time-out), the reason and any edited arguments; a tool span carries
// the policy rule that decided it by itself (agents_core/spans.py, "policy"). The row's
// chip and tooltip and the detail panel's facts all come from here, as text.

import { pretty } from "./dom.js";

const TIMEOUT = "timeout"; // decided_by of a time-out's decision (agents_core._tool_round)
const POLICY_WORDS = { allow: "allowed", deny: "denied", rewrite: "rewrote the arguments", ask: "asked a person" };
const POLICY_CHIPS = { allow: "allowed", deny: "denied", rewrite: "rewritten", ask: "asked" };

/** The decision of an approval span, or null while it waits (or for other spans). */
export function approvalOf(span) {
  const a = span.attributes || {};
  if (span.kind !== "human" || span.name !== "approval" || !a.decision) return null;
  const timedOut = a.decided_by === TIMEOUT;
  return {
    verdict: a.decision === "approve" ? (a.edited_args ? "approved with edits" : "approved") : "denied",
    approved: a.decision === "approve",
    who: timedOut ? "the time-out" : a.decided_by || "someone",
    channel: timedOut ? "time-out" : "person",
    reason: a.reason || "",
    edited: a.edited_args || null,
  };
}

/** The policy rule's decision on a tool span, or null when no rule decided it. */
export function policyOf(span) {
  const p = (span.attributes || {}).policy;
  if (span.kind !== "tool" || !p || !p.action) return null;
  return { rule: p.rule || "?", action: p.action, reason: p.reason || "", rewritten: p.rewritten_args ?? null };
}

/** The row's chip: [text, class] ("denied · time-out", "edited · ada", "policy:
 * allowed"), or null. A rule that only asked a person adds none: its wait says the rest. */
export function decisionChip(span) {
  const approval = approvalOf(span);
  if (approval) {
    const who = approval.channel === "time-out" ? "time-out" : approval.who;
    const short = approval.edited ? "edited" : approval.approved ? "approved" : "denied"; // the label is narrow
    return [`${short} · ${who}`, `decision ${approval.approved ? "approve" : "deny"}`];
  }
  const policy = policyOf(span);
  if (policy && policy.action !== "ask") return [`policy: ${POLICY_CHIPS[policy.action] || policy.action}`, `policy ${policy.action}`];
  return null;
}

/** One line for the row's tooltip, or "". */
export function decisionLine(span) {
  const approval = approvalOf(span);
  if (approval) return `${capital(approval.verdict)} by ${approval.who} (${approval.channel})${approval.reason ? `: ${approval.reason}` : ""}`;
  const policy = policyOf(span);
  if (policy) return `Policy rule ${policy.rule} ${POLICY_WORDS[policy.action] || policy.action}${policy.reason ? `: ${policy.reason}` : ""}`;
  return "";
}

/** The detail panel's facts about the decision: [term, text] pairs. */
export function decisionFacts(span) {
  const approval = approvalOf(span);
  if (approval) {
    const by = approval.channel === "time-out" ? "the approval's time-out (nobody decided in time)" : `${approval.who} (a person)`;
    return [["Decision", `${approval.verdict} by ${by}`], ...(approval.reason ? [["Reason", approval.reason]] : [])];
  }
  const policy = policyOf(span);
  if (!policy) return [];
  return [
    ["Policy", `rule ${policy.rule} ${POLICY_WORDS[policy.action] || policy.action}`],
    ...(policy.reason ? [["Policy's reason", policy.reason]] : []),
  ];
}

/** The detail panel's argument sections: [title, text] pairs (what the call was asked
 * with and what it ran with, when a person or a rule changed them). */
export function decisionSections(span, tree) {
  const approval = approvalOf(span);
  if (approval?.edited) {
    const call = tree.byId.get(span.parent_span_id);
    const shown = call?.kind === "tool" ? [["Arguments shown", pretty(call.attributes.arguments ?? {})]] : [];
    return [...shown, ["Edited arguments (what the tool ran with)", pretty(approval.edited)]];
  }
  const policy = policyOf(span);
  if (policy?.rewritten) return [[`Ran with (rewritten by rule ${policy.rule})`, pretty(policy.rewritten)]];
  return [];
}

function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
