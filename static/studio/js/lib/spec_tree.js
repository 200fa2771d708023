// The live tree preview of an agent spec: the root, its sub-agents (inline, or
// references resolved to the named agent's current spec), agents used as tools, and
// the tools, MCP servers, model and planner of each. Inline nodes are buttons that select them.

import { h } from "./dom.js";
import { dotted } from "./spec_paths.js";

const ICONS = { llm: "◆", react: "◇", sequential: "→", parallel: "⇉", loop: "↻" };
const MAX_REF_DEPTH = 6;

/**
 * @param {object} spec the root spec
 * @param {{selected: Array, onSelect: Function, agents: object, invalid: Set<string>}} options
 */
export function renderTree(spec, options) {
  return h("ul", { class: "tree", "aria-label": "Agent composition" }, node(spec, [], options, 0, ""));
}

function node(spec, path, options, refDepth, role) {
  if (!spec || typeof spec !== "object") return null;
  if ("ref" in spec) return refNode(spec, path, options, refDepth);
  const selectable = refDepth === 0;
  const key = dotted(path);
  const label = [h("span", { class: "icon", "aria-hidden": "true" }, ICONS[spec.type || "llm"] || "◆"),
    h("span", {}, spec.name || "(unnamed)"),
    options.invalid.has(key) && selectable ? h("span", { class: "invalid-mark", title: "has problems" }, "●") : null,
    h("span", { class: "kind" }, role || spec.type || "llm")];
  const head = selectable
    ? h("button", { type: "button", class: "node", "aria-current": String(dotted(options.selected) === key),
      onclick: () => options.onSelect(path) }, label)
    : h("div", { class: "leaf" }, label);
  return h("li", {}, head, children(spec, path, options, refDepth));
}

function refNode(spec, path, options, refDepth) {
  const target = options.agents[spec.ref];
  const head = h("button", { type: "button", class: "node", "aria-current": String(dotted(options.selected) === dotted(path)),
    onclick: () => options.onSelect(path), disabled: refDepth > 0 },
  h("span", { class: "icon", "aria-hidden": "true" }, "↗"), h("span", {}, spec.ref),
  target ? null : h("span", { class: "invalid-mark", title: "no agent with this name" }, "●"),
  h("span", { class: "kind" }, "ref"));
  const li = h("li", {}, head);
  if (target && refDepth < MAX_REF_DEPTH) li.append(children(target, path, options, refDepth + 1));
  return li;
}

function children(spec, path, options, refDepth) {
  const items = [];
  if (spec.model) items.push(leaf("▣", `model: ${spec.model}`));
  if (spec.planner?.type) items.push(leaf("☰", `planner: ${spec.planner.type}`));
  const approval = (ref) => (ref.requires_approval ? h("span", { class: "badge warn" }, "approval") : null);
  for (const tool of spec.tools || []) items.push(leaf("⚙", tool.name, approval(tool)));
  for (const ref of spec.mcp || []) items.push(leaf("⇄", `MCP: ${ref.server}`, approval(ref)));
  (spec.agent_tools || []).forEach((child, i) => items.push(node(child, [...path, "agent_tools", i], options, refDepth, "as tool")));
  (spec.sub_agents || []).forEach((child, i) => items.push(node(child, [...path, "sub_agents", i], options, refDepth, "")));
  return items.length ? h("ul", {}, items) : null;
}

function leaf(icon, text, extra = null) {
  return h("li", { class: "leaf" }, h("span", { class: "icon", "aria-hidden": "true" }, icon), h("span", {}, text), extra);
}
