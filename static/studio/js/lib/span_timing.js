// Where a run's wall time went, from its spans: studio/traces/timing.py's split, line
// for line, so a live run's header adds up as it runs (an ended run carries the server's
// own figures as `run.timing`; the e2e test checks the two agree).

import { micros, msToMicros } from "./spans.js";

const PRECEDENCE = ["human", "tools", "model"];

/** The split of a run's wall time (created .. ended, ISO times; ended = now while it
 * runs), in ms: total, queued, model, tools, human and overhead, adding up to total. */
export function wallTime(createdIso, startedIso, endedUs, spans) {
  const created = micros(createdIso);
  const ended = endedUs;
  const start = Math.min(Math.max(startedIso ? micros(startedIso) : ended, created), ended);
  const covered = coverage(intervals(spans, ended), start, ended);
  const busy = covered.human + covered.tools + covered.model;
  const split = {
    total_ms: ended - created,
    queued_ms: start - created,
    model_ms: covered.model,
    tools_ms: covered.tools,
    human_ms: covered.human,
    overhead_ms: Math.max(0, ended - start - busy),
  };
  for (const key of Object.keys(split)) split[key] = Math.round(split[key]) / 1000;
  return split;
}

function intervals(spans, ended) {
  const found = [];
  for (const span of spans) {
    if (span.kind === "model" || span.kind === "human" || span.kind === "wait") {
      // a wait for the model's rate limit is time spent on the model
      found.push([span.start, span.end ?? ended, span.kind === "wait" ? "model" : span.kind]);
    } else if (span.kind === "tool" && "ran_from" in span.attributes) {
      const from = micros(span.attributes.ran_from);
      found.push([from, from + msToMicros(span.attributes.ran_ms), "tools"]);
    }
  }
  return found;
}

/** Time of [start, end] each kind covers, overlaps counted once for the kind first in
 * PRECEDENCE: one sweep over the intervals' ends. */
function coverage(list, start, end) {
  const covered = { human: 0, tools: 0, model: 0 };
  const edges = [];
  for (const [a0, b0, kind] of list) {
    const a = Math.max(a0, start);
    const b = Math.min(b0, end);
    if (b > a) edges.push([a, 1, kind], [b, -1, kind]);
  }
  edges.sort((x, y) => x[0] - y[0]);
  const active = { human: 0, tools: 0, model: 0 };
  let at = start;
  for (const [moment, step, kind] of edges) {
    const leading = PRECEDENCE.find((k) => active[k]);
    if (leading) covered[leading] += moment - at;
    at = moment;
    active[kind] += step;
  }
  return covered;
}
