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

/** The exact sum of decimal strings, written as Python writes format(sum, "f"). */
export function addDecimals(amounts) {
  const parsed = amounts.map(parseDecimal);
  const scale = Math.max(0, ...parsed.map((d) => d.scale));
  const units = parsed.reduce((total, d) => total + d.units * 10n ** BigInt(scale - d.scale), 0n);
  if (scale === 0) return units.toString();
  const digits = units.toString().padStart(scale + 1, "0");
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** sum_costs: the sum of calls' costs ({amount, currency}, or null when unknown). */
export function sumCosts(costs) {
  const known = costs.filter((cost) => cost !== null);
  const currencies = new Set(known.map((cost) => cost.currency));
  const unknown = costs.length - known.length;
  if (currencies.size !== 1) return { amount: null, currency: null, complete: false, calls: costs.length, unknown };
  return {
    amount: addDecimals(known.map((cost) => String(cost.amount))),
    currency: [...currencies][0],
    complete: unknown === 0,
    calls: costs.length,
    unknown,
  };
}

/** SpanTree._costs: each answered model call's cost (``span.callCost``, set when its
 * answer arrived), on its own span and every span above it; the rest cost nothing. */
export function rollUpCosts(byId) {
  const calls = new Map();
  for (const span of byId.values()) {
    if (span.callCost === undefined) continue;
    const seen = new Set(); // a parent loop in damaged events must not hang
    for (let at = span; at && !seen.has(at.span_id); at = byId.get(at.parent_span_id ?? "")) {
      seen.add(at.span_id);
      if (!calls.has(at.span_id)) calls.set(at.span_id, []);
      calls.get(at.span_id).push(span.callCost);
    }
  }
  for (const span of byId.values()) {
    const costs = calls.get(span.span_id);
    span.cost = costs ? sumCosts(costs) : null;
  }
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
