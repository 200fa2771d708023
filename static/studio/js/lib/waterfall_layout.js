// How one run's spans are laid out as a waterfall: swimlanes, rows, arrows, loop
// iterations and the critical path. Pure functions of the spans (lib/spans.js records:
// times in microseconds), so the view only draws what this says.
//
// - A lane per agent on its path (an agent and the agents under it: parallel branches
//   and sub-agents each get their own; a loop's iterations share their agent's lane),
//   nested as the agents are. A lane's rows are its agent's runs, each followed by its
//   model calls, tool calls and waits, nested by parent.
// - Arrows: from a tool call to the agent it runs (an agent called as a tool), and from
//   a transfer_to_agent call to the agent it hands over to.
// - The critical path: from the run's root, the child that ended last, then the child
//   that ended last before that one began, and so on, each followed down: the chain of
//   spans that set when the run ended.

export const KINDS = ["agent", "model", "tool", "human", "wait"];

/** spans: one run's spans. options: {collapsed: Set of lane keys, show(span) -> bool,
 * now: microseconds, for open spans}. */
export function layoutRun(spans, { collapsed = new Set(), show = null, now = 0 } = {}) {
  const tree = spanTree(spans);
  const lanes = buildLanes(spans, tree);
  const rows = [];
  const index = new Map(); // span id -> row
  const laneRows = new Map(); // lane key -> row of its header
  const emit = (lane) => {
    const first = rows.length;
    const open = !collapsed.has(lane.key);
    if (lane.agents.length === 1) {
      // One run of the agent: its row heads the lane.
      const [agent] = lane.agents;
      laneRows.set(lane.key, rows.length);
      addSpanRows(agent, lane, 0, tree, open ? show : null, rows, index, { head: true, deep: open });
    } else {
      laneRows.set(lane.key, rows.length);
      rows.push({ type: "lane", key: `lane:${lane.key}`, lane, depth: lane.depth });
      if (open) for (const agent of lane.agents) addSpanRows(agent, lane, 0, tree, show, rows, index);
    }
    if (open) for (const child of lane.children) emit(child);
    lane.rowRange = [first, rows.length - 1];
    const head = rows[first];
    if (show && (rows.length === first + 1) && !(head?.type === "span" && show(head.span))) {
      rows.length = first; // a lane with nothing the filters let through is not shown
      index.delete(lane.agents[0].span_id);
      laneRows.delete(lane.key);
      lane.rowRange = null;
    }
  };
  for (const lane of lanes.roots) emit(lane);
  const bounds = extent(spans, now);
  return {
    rows,
    index,
    collapsed,
    laneRows,
    lanes: lanes.byKey,
    laneOf: lanes.laneOf,
    tree,
    arrows: arrows(spans, tree),
    iterations: iterations(spans, tree, lanes.laneOf),
    critical: criticalPath(spans, tree, now),
    ...bounds,
  };
}

/** The row that shows ``spanId`` (its lane's header when the lane is collapsed). */
export function rowOfSpan(layout, spanId) {
  const row = layout.index.get(spanId);
  if (row !== undefined) return row;
  const lane = layout.laneOf.get(spanId);
  return lane && layout.collapsed.has(lane.key) && layout.laneRows.has(lane.key) ? layout.laneRows.get(lane.key) : null;
}

/** Parent and children of each span; children in the order they began. */
export function spanTree(spans) {
  const byId = new Map(spans.map((span) => [span.span_id, span]));
  const children = new Map();
  const roots = [];
  for (const span of spans) {
    const parent = span.parent_span_id && byId.has(span.parent_span_id) ? span.parent_span_id : null;
    if (parent === null) roots.push(span);
    else {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(span);
    }
  }
  for (const list of children.values()) list.sort((a, b) => a.start - b.start);
  return { byId, children, roots };
}

/** The agent span ``span`` belongs to (itself, for an agent). */
export function agentOf(span, tree) {
  let at = span;
  while (at && at.kind !== "agent") at = tree.byId.get(at.parent_span_id) || null;
  return at;
}

function buildLanes(spans, tree) {
  const byKey = new Map();
  const laneOf = new Map(); // span id -> lane
  const roots = [];
  const laneOfAgent = (agent) => {
    if (laneOf.has(agent.span_id)) return laneOf.get(agent.span_id);
    const above = agentOf(tree.byId.get(agent.parent_span_id) || null, tree);
    const parent = above ? laneOfAgent(above) : null;
    const key = parent ? `${parent.key}/${agent.author}` : agent.author;
    let lane = byKey.get(key);
    if (!lane) {
      const via = viaOf(agent, tree);
      lane = { key, name: agent.author, depth: parent ? parent.depth + 1 : 0, parent, agents: [], children: [], via };
      byKey.set(key, lane);
      (parent ? parent.children : roots).push(lane);
    }
    lane.agents.push(agent);
    laneOf.set(agent.span_id, lane);
    return lane;
  };
  for (const span of spans) if (span.kind === "agent") laneOfAgent(span);
  for (const span of spans) {
    if (span.kind === "agent") continue;
    const agent = agentOf(span, tree);
    if (agent) laneOf.set(span.span_id, laneOf.get(agent.span_id));
  }
  return { byKey, laneOf, roots };
}

/** How an agent came to run: called as a tool, handed over to (its parent called
 * transfer_to_agent for it), or as a sub-agent. */
function viaOf(agent, tree) {
  const parent = tree.byId.get(agent.parent_span_id);
  if (parent?.kind === "tool") return "tool";
  return transferOf(agent, tree) ? "transfer" : "sub-agent";
}

/** The transfer_to_agent call that handed over to ``agent``, if one did. */
export function transferOf(agent, tree) {
  const parent = tree.byId.get(agent.parent_span_id);
  if (parent?.kind !== "agent") return null;
  const calls = (tree.children.get(parent.span_id) || []).filter(
    (span) => span.kind === "tool" && span.attributes.transfer_to === agent.author && span.start <= agent.start);
  return calls[calls.length - 1] || null;
}

function addSpanRows(span, lane, depth, tree, show, rows, index, { head = false, deep = true } = {}) {
  if (head || !show || show(span)) {
    index.set(span.span_id, rows.length);
    rows.push({ type: "span", key: span.span_id, span, lane, head, depth: lane.depth + depth });
  }
  if (!deep) return;
  for (const child of tree.children.get(span.span_id) || []) {
    if (child.kind !== "agent") addSpanRows(child, lane, depth + 1, tree, show, rows, index);
  }
}

function extent(spans, now) {
  let start = Infinity;
  let end = -Infinity;
  let open = false;
  for (const span of spans) {
    start = Math.min(start, span.start);
    end = Math.max(end, span.end ?? now);
    open ||= span.end === null;
  }
  if (!spans.length) return { start: now, end: now, open: false };
  return { start, end: Math.max(end, start), open };
}

function arrows(spans, tree) {
  const found = [];
  const agentsByName = new Map();
  for (const span of spans) {
    if (span.kind !== "agent") continue;
    const parent = tree.byId.get(span.parent_span_id);
    if (parent?.kind === "tool") found.push({ kind: "call", from: parent.span_id, to: span.span_id });
    if (!agentsByName.has(span.author)) agentsByName.set(span.author, []);
    agentsByName.get(span.author).push(span);
  }
  for (const span of spans) {
    const target = span.kind === "tool" ? span.attributes.transfer_to : null;
    if (!target) continue;
    const next = (agentsByName.get(target) || []).find((agent) => agent.start >= span.start);
    if (next) found.push({ kind: "transfer", from: span.span_id, to: next.span_id });
  }
  return found;
}

/** Where each loop iteration begins: the start of its first agent, per loop. */
function iterations(spans, tree, laneOf) {
  const loops = new Map(); // loop span id -> Map(iteration -> start)
  for (const span of spans) {
    const n = span.kind === "agent" ? span.attributes.iteration : undefined;
    if (n === undefined || !span.parent_span_id) continue;
    if (!loops.has(span.parent_span_id)) loops.set(span.parent_span_id, new Map());
    const starts = loops.get(span.parent_span_id);
    starts.set(n, Math.min(starts.get(n) ?? Infinity, span.start));
  }
  const marks = [];
  for (const [loopId, starts] of loops) {
    const lane = laneOf.get(loopId);
    if (!tree.byId.has(loopId) || !lane) continue;
    for (const [n, at] of starts) marks.push({ loop: loopId, lane, n, at });
  }
  return marks;
}

export function criticalPath(spans, tree, now) {
  const critical = new Set();
  if (!tree.roots.length) return critical;
  const endOf = (span) => span.end ?? now;
  const walk = (span) => {
    critical.add(span.span_id);
    const kids = [...(tree.children.get(span.span_id) || [])].sort((a, b) => endOf(b) - endOf(a));
    let cursor = endOf(span);
    for (const kid of kids) {
      if (endOf(kid) > cursor) continue; // ran alongside the one that mattered
      walk(kid);
      cursor = kid.start;
    }
  };
  walk(tree.roots.reduce((last, span) => (endOf(span) > endOf(last) ? span : last)));
  return critical;
}

/** How hot a span is: its share of the run's wall time, in five steps (0 cool .. 4). */
export function heatOf(span, total, now) {
  return stepOf(((span.end ?? now) - span.start) / Math.max(total, 1));
}

/** A span's cost heat, as bar classes: ``cost-0`` .. ``cost-4`` by its share of the
 * ``costliest`` span's cost, ``cost-partial`` too when some calls' costs are unknown;
 * ``cost-unknown`` when none is known (or there is no single total); ``cost-none`` for
 * a span with no model call beneath it. */
export function costHeatOf(cost, costliest) {
  if (!cost) return "cost-none";
  if (cost.amount === null) return "cost-unknown";
  const step = `cost-${stepOf(costliest > 0 ? Number(cost.amount) / costliest : 0)}`;
  return cost.complete ? step : `${step} cost-partial`;
}

function stepOf(share) {
  if (share < 0.01) return 0;
  if (share < 0.05) return 1;
  if (share < 0.15) return 2;
  if (share < 0.4) return 3;
  return 4;
}
