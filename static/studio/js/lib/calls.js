// What became of a tool call, in one vocabulary for the timeline and the playground.
//
// A tool's error result reads "<code>: <message>" (agents_core.ledger). The codes below
// close calls that did not finish normally; any other error is the tool's own failure.
// A call that asked for approval is denied when its decision says so.

export const OUTCOMES = {
  done: "done",
  error: "error",
  denied: "denied",
  not_run: "not run",
  cancelled: "cancelled",
  in_doubt: "in doubt",
};

const CLOSING_CODES = new Set(["denied", "not_run", "cancelled", "in_doubt"]);

/** The code an error result starts with ("denied: ..." -> "denied"), else "error". */
export function errorCode(result) {
  const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/.exec(result || "");
  return match ? match[1] : "error";
}

/** The outcome of a tool_response part, given the call's approval verdict (if any). */
export function outcomeOf(part, verdict = null) {
  if (!part.is_error) return "done";
  if (verdict === "deny") return "denied";
  const code = errorCode(part.result);
  return CLOSING_CODES.has(code) ? code : "error";
}

/** What a call left without a response says once its run has ended (sessions stored
 * before runs answered every open call). */
export function unansweredOutcome(run, awaitedApproval) {
  if (awaitedApproval) return "not_run";
  return run?.status === "cancelled" ? "cancelled" : "in_doubt";
}

const ENDINGS = {
  succeeded: "The run ended",
  degraded: "The run ended degraded",
  cancelled: "The run was cancelled",
  failed: "The run failed",
  interrupted: "The run was interrupted",
};

/** How a run ended, as the approval cards it left undecided say it. */
export function endingText(run) {
  const how = ENDINGS[run?.status] || "The run ended";
  // The code says more only when it is not the status again ("interrupted (interrupted)").
  const why = run?.error_code && run.error_code !== run.status ? ` (${run.error_code})` : "";
  return `${how}${why} before a decision was made; the call did not run.`;
}

/** A decision in words: "Approved with edits by demo", "Denied by ada: not today". */
export function verdictText(approval) {
  const a = approval || {};
  const verdict = a.decision === "approve" ? (a.edited_args ? "Approved with edits" : "Approved") : "Denied";
  return `${verdict}${a.decided_by ? ` by ${a.decided_by}` : ""}${a.reason ? `: ${a.reason}` : ""}`;
}

/** Counts of a set of outcomes, for the totals: {calls, denied, failed, unfinished}. */
export function tally(outcomes) {
  const counts = { calls: 0, denied: 0, failed: 0, unfinished: 0 };
  for (const outcome of outcomes) {
    counts.calls += 1;
    if (outcome === "denied") counts.denied += 1;
    else if (outcome === "error") counts.failed += 1;
    else if (outcome !== "done" && outcome !== null) counts.unfinished += 1;
  }
  return counts;
}

/** "3 · 1 denied · 1 failed" (or with ``noun``, "3 tool calls · 1 denied · 1 failed"):
 * tool calls and how many did not succeed. */
export function tallyText(counts, noun = "") {
  const parts = [noun ? `${counts.calls} ${noun}${counts.calls === 1 ? "" : "s"}` : String(counts.calls)];
  if (counts.denied) parts.push(`${counts.denied} denied`);
  if (counts.failed) parts.push(`${counts.failed} failed`);
  if (counts.unfinished) parts.push(`${counts.unfinished} not finished`);
  return parts.join(" · ");
}
