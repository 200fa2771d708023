// The builder's form for one agent node of a spec. Field edits change the spec in place
// and call onEdit(); structural edits (type, tools, children) call onStructure() so the
// page re-renders. Every field is wrapped in data-field="<dotted spec path>" so the
// API's errors land next to it.

import { h } from "./dom.js";
import { assign, assignIn, checkbox, controlId, field, numberInput, select, textInput } from "./spec_fields.js";
import { failureField, renderHooks, renderOutput } from "./spec_form_control.js";
import { renderPolicies } from "./spec_form_policies.js";
import { renderMcp } from "./spec_form_mcp.js";
import { renderMemory } from "./spec_form_memory.js";
import { renderSkills } from "./spec_form_skills.js";
import { renderInstruction } from "./spec_form_template.js";
import { renderTools } from "./spec_form_tools.js";
import { dotted, getAt } from "./spec_paths.js";

export const AGENT_TYPES = {
  llm: "LLM agent",
  react: "ReAct agent",
  sequential: "Sequential (runs children in turn)",
  parallel: "Parallel (runs children at once)",
  loop: "Loop (repeats children)",
};
const MODEL_TYPES = new Set(["llm", "react"]);
const PLANNERS = [["", "None"], ["plan_react", "Plan-ReAct"], ["task", "Task list"]];
const ON_TIMEOUT = [["", "Deny it (default)"], ["approve", "Approve it"]];
const LIMITS = [
  ["max_steps", "Max steps"], ["max_model_calls", "Max model calls"], ["max_tool_calls", "Max tool calls"],
  ["max_wall_time_s", "Max wall time (s)"], ["max_tokens", "Max tokens"], ["max_transfers", "Max transfers"],
];

/**
 * @param {object} ctx spec, path (of the node shown), models, tools, hooks, mcpServers, agentNames,
 *   rules (what names allow, in words), defaults, urls, allNames(), summary(), setSummary(),
 *   select(path), onEdit(), onStructure(), rerender()
 */
export function renderNodeForm(ctx) {
  const { spec, path } = ctx;
  const node = getAt(spec, path);
  const form = h("div", { class: "node-form" });
  if (!node) return form;
  if ("ref" in node) return renderRef(ctx, node, form);
  const at = (key) => [...path, key];
  const set = (key, value) => {
    assign(node, key, value);
    ctx.onEdit();
  };
  const modelType = MODEL_TYPES.has(node.type || "llm");

  if (path.length === 0) {
    form.append(field("agent.description", "Summary", textInput("f-summary", ctx.summary(), ctx.setSummary,
      { placeholder: "Shown on the home page and in the agent list", spellcheck: "true" })));
  }
  form.append(h("div", { class: "grid-2" },
    field(at("name"), "Name", textInput(controlId(at("name")), node.name, (v) => set("name", v), { required: true }),
      { required: true, help: `${ctx.rules.name} ${path.length ? "Unique in the tree." : "Also the agent's name in Studio."}` }),
    field(at("type"), "Type", select(controlId(at("type")), Object.entries(AGENT_TYPES), node.type || "llm",
      (type) => changeType(node, type, ctx)))));
  form.append(field(at("description"), "Description", h("textarea", { id: controlId(at("description")), rows: 2,
    value: node.description || "", placeholder: "What this agent is for (other agents read it when they transfer)",
    oninput: (e) => set("description", e.target.value) })));

  if (modelType) form.append(...modelFields(ctx, node, path, set));
  else if (node.type === "loop") {
    form.append(field(at("max_iterations"), "Max passes",
      numberInput(controlId(at("max_iterations")), node.max_iterations, (v) => set("max_iterations", v))));
  }
  form.append(failureField(ctx, node, path, "agent"));
  form.append(renderChildren(ctx, node, path, "sub_agents", modelType ? "Sub-agents (it may transfer to them)" : "Steps"));
  if (modelType) form.append(renderChildren(ctx, node, path, "agent_tools", "Agents as tools"));
  if (path.length === 0) form.append(renderLimits(ctx, node), renderBudget(ctx, node), renderCompaction(ctx, node));
  return form;
}

function modelFields(ctx, node, path, set) {
  const at = (key) => [...path, key];
  const models = [...new Set([...ctx.models, ...(node.model ? [node.model] : [])])];
  return [
    field(at("model"), "Model", select(controlId(at("model")), [["", "Choose a model…"], ...models.map((m) => [m, m])],
      node.model || "", (v) => set("model", v)), { required: true }),
    ...renderInstruction(ctx, node, path, set),
    h("div", { class: "grid-3" },
      field(at("planner"), "Planner", select(controlId(at("planner")), PLANNERS, node.planner?.type || "",
        (v) => set("planner", v ? { type: v } : ""))),
      field(at("output_key"), "Output key", textInput(controlId(at("output_key")), node.output_key,
        (v) => set("output_key", v), { placeholder: "state key" }), { help: "Keeps the answer in session state." }),
      field(at("max_iterations"), "Max model calls / turn",
        numberInput(controlId(at("max_iterations")), node.max_iterations, (v) => set("max_iterations", v)))),
    renderResilience(node, path, set),
    (node.type || "llm") === "llm" ? renderOutput(ctx, node, path) : null,
    renderTools(ctx, node, path),
    renderMcp(ctx, node, path),
    renderApproval(ctx, node, path),
    renderMemory(ctx, node, path),
    renderSkills(ctx, node, path),
    renderHooks(ctx, node, path),
    renderPolicies(ctx, node, path),
  ].filter(Boolean);
}

// Fallbacks (tried in order when a call fails retryably or its provider's breaker is
// open) as comma-separated model names; the response cache as its time-to-live.
function renderResilience(node, path, set) {
  const at = (key) => [...path, key];
  const names = (text) => text.split(",").map((name) => name.trim()).filter(Boolean);
  return h("div", { class: "grid-2" },
    field(at("fallback_models"), "Fallback models", textInput(controlId(at("fallback_models")),
      (node.fallback_models || []).join(", "), (v) => set("fallback_models", names(v).length ? names(v) : ""),
      { placeholder: "none" }), { help: "Model names, comma-separated, tried in order when a call fails and cannot be retried." }),
    field(at("cache"), "Cache answers for (s)", numberInput(controlId(at("cache")), node.cache?.ttl_s,
      (v) => set("cache", v === "" ? "" : { ttl_s: v }), { min: "1", step: "1", placeholder: "off" }),
    { help: "The same request within this time gets the kept answer, at no cost. Empty: off." }));
}

function changeType(node, type, ctx) {
  node.type = type;
  if (type !== "llm") for (const key of ["output_schema", "output_retries"]) delete node[key];
  if (MODEL_TYPES.has(type)) {
    if (!node.model && ctx.models.length) node.model = ctx.models[0];
  } else {
    for (const key of ["model", "fallback_models", "cache", "instruction", "instruction_template", "tools", "mcp", "planner", "agent_tools", "output_key", "approval", "hooks", "policies", "memory", "skills"]) delete node[key];
    if (type !== "loop") delete node.max_iterations;
    node.sub_agents ||= [];
  }
  ctx.onStructure();
}

function renderApproval(ctx, node, path) {
  const at = (key) => [...path, "approval", key];
  const approval = node.approval || {};
  const update = (key, value) => {
    assignIn(node, "approval", key, value);
    ctx.onEdit();
  };
  return h("fieldset", { dataset: { field: dotted([...path, "approval"]) } }, h("legend", {}, "Approvals"),
    h("p", { class: "hint" }, "Calls of tools and MCP servers marked “Needs approval”, and calls a policy rule asks about, wait for a person to approve, edit or deny them."),
    h("div", { class: "grid-2" },
      field(at("timeout_s"), "Time-out (s)", numberInput(controlId(at("timeout_s")), approval.timeout_s,
        (v) => update("timeout_s", v), { placeholder: String(ctx.defaults.approval.timeout_s) }),
      { help: "How long a call waits for an answer." }),
      field(at("on_timeout"), "When nobody answers in time", select(controlId(at("on_timeout")), ON_TIMEOUT,
        approval.on_timeout === "approve" ? "approve" : "", (v) => update("on_timeout", v)))));
}

function renderChildren(ctx, node, path, key, label) {
  const children = node[key] || [];
  const move = (from, to) => {
    const [item] = children.splice(from, 1);
    children.splice(to, 0, item);
    ctx.onStructure();
  };
  const remove = (index) => {
    children.splice(index, 1);
    if (!children.length && key === "agent_tools") delete node[key];
    ctx.onStructure();
  };
  const items = children.map((child, index) => h("li", { dataset: { field: dotted([...path, key, index]) } },
    h("span", { class: "grow" }, child.ref ? `↗ ${child.ref}` : child.name || "(unnamed)",
      " ", h("span", { class: "faint" }, child.ref ? "reference" : child.type || "llm")),
    child.ref ? null : h("button", { type: "button", class: "btn small", onclick: () => ctx.select([...path, key, index]) }, "Edit"),
    h("button", { type: "button", class: "btn small ghost", "aria-label": "Move up", disabled: index === 0, onclick: () => move(index, index - 1) }, "↑"),
    h("button", { type: "button", class: "btn small ghost", "aria-label": "Move down", disabled: index === children.length - 1, onclick: () => move(index, index + 1) }, "↓"),
    h("button", { type: "button", class: "btn small danger", onclick: () => remove(index) }, "Remove")));
  const refPicker = h("select", { "aria-label": `Reference another agent as ${label}` },
    h("option", { value: "" }, "Reference an agent…"), ctx.agentNames.map((name) => h("option", { value: name }, name)));
  const add = (child) => {
    node[key] ||= [];
    node[key].push(child);
    ctx.onStructure();
  };
  return h("fieldset", { dataset: { field: dotted([...path, key]) } }, h("legend", {}, label),
    items.length ? h("ul", { class: "child-list" }, items) : h("p", { class: "hint" }, "None yet."),
    h("div", { class: "row" },
      h("button", { type: "button", class: "btn small", onclick: () => add(newChild(ctx)) }, "+ New agent"),
      key === "sub_agents" && ctx.agentNames.length ? [refPicker,
        h("button", { type: "button", class: "btn small", onclick: () => refPicker.value && add({ ref: refPicker.value }) }, "Add reference")] : null));
}

function newChild(ctx) {
  const taken = new Set(ctx.allNames());
  let n = 1;
  while (taken.has(`agent_${n}`)) n += 1;
  const child = { type: "llm", name: `agent_${n}`, instruction: "" };
  if (ctx.models.length) child.model = ctx.models[0];
  return child;
}

function renderLimits(ctx, node) {
  const limits = node.limits || {};
  const inputs = LIMITS.map(([key, label]) => field(["limits", key], label,
    numberInput(controlId(["limits", key]), limits[key], (value) => {
      assignIn(node, "limits", key, value);
      ctx.onEdit();
    })));
  return h("fieldset", { dataset: { field: "limits" } }, h("legend", {}, "Run limits"),
    h("p", { class: "hint" }, "Empty fields keep the defaults (50 steps, 100 model calls, 200 tool calls, 600 s)."),
    h("div", { class: "grid-3" }, inputs));
}

/** Root only: what the version may spend per run and per UTC day; costs are decimal text
 * (kept exact, as the API takes them), tokens whole numbers. */
function renderBudget(ctx, node) {
  const budget = node.budget || {};
  const update = (key, value) => {
    assignIn(node, "budget", key, value);
    ctx.onEdit();
  };
  const at = (key) => ["budget", key];
  const cost = (key, label) => field(at(key), label, textInput(controlId(at(key)), budget[key],
    (v) => update(key, v.trim()), { inputmode: "decimal", placeholder: "No limit" }));
  const tokens = (key, label) => field(at(key), label, numberInput(controlId(at(key)), budget[key],
    (v) => update(key, v), { min: "1", step: "1", placeholder: "No limit" }));
  return h("fieldset", { dataset: { field: "budget" } }, h("legend", {}, "Budget"),
    h("p", { class: "hint" }, "A model call that could pass one of these is refused before it is made, and the run ends (budget_exceeded). Costs are in the models' price currency (USD)."),
    h("div", { class: "grid-2" },
      cost("run_cost", "Cost per run"), cost("day_cost", "Cost per day (UTC)"),
      tokens("run_tokens", "Tokens per run"), tokens("day_tokens", "Tokens per day (UTC)")));
}

/** Root only: when a long session's older events are summarised (on by default). */
function renderCompaction(ctx, node) {
  const compaction = node.compaction || {};
  const defaults = ctx.defaults.compaction;
  const update = (key, value) => {
    assignIn(node, "compaction", key, value);
    ctx.onEdit();
  };
  const at = (key) => ["compaction", key];
  const models = [["", "Its first model"], ...ctx.models.map((name) => [name, name])];
  return h("fieldset", { dataset: { field: "compaction" } }, h("legend", {}, "Compaction"),
    h("p", { class: "hint" }, "Long sessions summarise their older events so the model's context stays bounded; the summary shows in the timeline."),
    h("div", { dataset: { field: "compaction.enabled" } }, checkbox(controlId(at("enabled")), "Summarise long sessions",
      compaction.enabled !== false, (checked) => {
        node.compaction ||= {};
        if (checked) delete node.compaction.enabled; // on is the default
        else node.compaction.enabled = false;
        if (!Object.keys(node.compaction).length) delete node.compaction;
        ctx.onEdit();
      })),
    h("div", { class: "grid-3" },
      field(at("threshold"), "After this many events", numberInput(controlId(at("threshold")), compaction.threshold,
        (v) => update("threshold", v), { placeholder: String(defaults.threshold), min: "2", step: "1" })),
      field(at("keep_last"), "Keep this many raw", numberInput(controlId(at("keep_last")), compaction.keep_last,
        (v) => update("keep_last", v), { placeholder: String(defaults.keep_last), min: "1", step: "1" })),
      field(at("model"), "Summarised by", select(controlId(at("model")), models, compaction.model || "",
        (v) => update("model", v)))));
}

function renderRef(ctx, node, form) {
  const names = [...new Set([node.ref, ...ctx.agentNames])];
  form.append(h("p", {}, "A reference to your agent ", h("code", {}, node.ref),
    ": its current version runs here. Edit it in its own builder."),
  field([...ctx.path, "ref"], "Agent", select("f-ref", names.map((name) => [name, name]), node.ref, (value) => {
    node.ref = value;
    ctx.onStructure();
  })));
  return form;
}
