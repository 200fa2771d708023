// What the model calls in a span cost, in the browser: the cost half of
// agents_core/spans.py (SpanTree._costs, sum_costs), so live spans carry what the spans
// API gives. A model span carries its call's cost, as its stored event was priced; an
// agent span (or the tool span of an agent called as a tool) the exact sum of the calls
// beneath it. Unknown is never zero, and calls in several currencies have no total.
//
// Amounts are decimal strings. They are added exactly, as Python's Decimal adds them:
// integers (BigInt) of units of 10^-scale, the scale the finest of them (never below 0,
// as sum() starts from Decimal(0)), written back in plain notation as format(d, "f").

import { formatCost } from "./ui.js";

const DECIMAL = /^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/** A decimal string ("0.0000120000", "1.200E-7") as { units, scale }: units × 10^-scale. */
export function parseDecimal(text) {
  const m = DECIMAL.exec(String(text).trim());
  if (!m || (!m[1] && !m[2])) throw new RangeError(`not a decimal: ${text}`);
  const [, whole = "", fraction = "", exponent = "0"] = m;
  const scale = fraction.length - Number(exponent);
  const units = BigInt(`${whole}${fraction}` || "0");
  return scale >= 0 ? { units, scale } : { units: units * 10n ** BigInt(-scale), scale: 0 };
}

/** A sum of model calls' costs being added up: exact, at the finest scale seen. */
class CostSum {
  constructor() {
    this.units = 0n;
    this.scale = 0; // sum() starts from Decimal(0): never coarser than whole units
    this.currencies = new Set();
    this.calls = 0;
    this.unknown = 0;
  }

  /** Adds one call's cost: {units, scale, currency}, or null when unknown. */
  add(call) {
    this.calls += 1;
    if (call === null) {
      this.unknown += 1;
      return;
    }
    this.currencies.add(call.currency);
    if (call.scale > this.scale) {
      this.units *= 10n ** BigInt(call.scale - this.scale);
      this.scale = call.scale;
    }
    this.units += call.scale === this.scale ? call.units : call.units * 10n ** BigInt(this.scale - call.scale);
  }

  /** sum_costs's SpanCost. */
  cost() {
    const { calls, unknown } = this;
    if (this.currencies.size !== 1) return { amount: null, currency: null, complete: false, calls, unknown };
    return { amount: plain(this.units, this.scale), currency: [...this.currencies][0], complete: unknown === 0, calls, unknown };
  }
}

/** units × 10^-scale in plain notation, as Python writes format(d, "f"). */
function plain(units, scale) {
  if (scale === 0) return units.toString();
  const digits = units.toString().padStart(scale + 1, "0");
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** The exact sum of decimal strings, written as Python writes format(sum, "f"). */
export function addDecimals(amounts) {
  const sum = new CostSum();
  for (const amount of amounts) sum.add({ ...parseDecimal(amount), currency: "" });
  return plain(sum.units, sum.scale);
}

/** What ended runs cost all told, as the server adds a session's up (run_costs.
 * session_cost, costs.total_of): each run's stored cost, exactly; a fork's copies of its
 * parent's runs cost nothing here (they were paid for in the parent); incomplete when a
 * run's is. A SpanCost, for ``costText``; null when no run has ended. */
export function runsCost(runs) {
  const sum = new CostSum();
  let complete = true;
  for (const run of runs) {
    if (!run?.ended_at || run.copied_from) continue;
    complete &&= run.cost_complete !== false;
    const known = run.cost !== null && run.cost !== undefined;
    sum.add(known ? { ...parseDecimal(run.cost), currency: run.cost_currency } : null);
  }
  if (!sum.calls) return null;
  const cost = sum.cost();
  return { ...cost, complete: cost.complete && complete };
}

/** SpanTree._costs: each answered model call's cost (``span.callCost``, set when its
 * answer arrived), on its own span and every span above it; the rest cost nothing.
 * Each call is read once and added as it goes up (a run of 9,000 spans, 3,000 of them
 * calls, sums in some 5-15 ms: SpanStore sums again only when a call was answered). */
export function rollUpCosts(byId) {
  const sums = new Map();
  for (const span of byId.values()) {
    if (span.callCost === undefined) continue;
    const cost = span.callCost;
    const call = cost === null ? null : { ...parseDecimal(cost.amount), currency: cost.currency };
    const seen = new Set(); // a parent loop in damaged events must not hang
    for (let at = span; at && !seen.has(at.span_id); at = byId.get(at.parent_span_id ?? "")) {
      seen.add(at.span_id);
      let sum = sums.get(at.span_id);
      if (!sum) sums.set(at.span_id, (sum = new CostSum()));
      sum.add(call);
    }
  }
  for (const span of byId.values()) span.cost = sums.get(span.span_id)?.cost() ?? null;
}

/** The call's own cost of a model span as the spans API sent it (its SpanCost). */
export function callCostOf(span) {
  const cost = span.cost;
  if (span.kind !== "model" || !cost) return undefined; // no answer yet
  return cost.amount === null ? null : { amount: cost.amount, currency: cost.currency };
}

/** A span's cost in words: "$0.0012", "≥ $0.0012" (some calls' costs unknown), "unknown",
 * "in several currencies"; "" for a span with no model call beneath it. */
export function costText(cost) {
  if (!cost) return "";
  if (cost.amount !== null) return formatCost(cost.amount, cost.currency, { complete: cost.complete });
  return cost.unknown === cost.calls ? "unknown" : "in several currencies";
}

/** A number for comparing costs (display and colouring only; sums stay exact). */
export function costValue(cost) {
  return cost && cost.amount !== null ? Number(cost.amount) : null;
}
