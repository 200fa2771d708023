// The builder's form for one agent node of a spec. Field edits change the spec in place
// and call onEdit(); structural edits (type, tools, children) call onStructure() so the
// page re-renders. Every field is wrapped in data-field="<dotted spec path>" so the
// API's errors land next to it.

import { h } from "./dom.js";
import { dotted, getAt } from "./spec_paths.js";

export const AGENT_TYPES = {
  llm: "LLM agent",
  react: "ReAct agent",
  sequential: "Sequential (runs children in turn)",
  parallel: "Parallel (runs children at once)",
  loop: "Loop (repeats children)",
};
const MODEL_TYPES = new Set(["llm", "react"]);
const LIMITS = [
  ["max_steps", "Max steps"], ["max_model_calls", "Max model calls"], ["max_tool_calls", "Max tool calls"],
  ["max_wall_time_s", "Max wall time (s)"], ["max_tokens", "Max tokens"], ["max_transfers", "Max transfers"],
];

export function renderNodeForm(ctx) {
  const { spec, path } = ctx;
  const node = getAt(spec, path);
  const form = h("div", { class: "node-form" });
  if (!node) return form;
  if ("ref" in node) return renderRef(ctx, node, form);
  const field = (key, label, control, help) => h("div", { class: "field", dataset: { field: dotted([...path, key]) } },
    h("label", { for: control.id }, label), control, help ? h("p", { class: "help" }, help) : null);
  const id = (key) => `f-${[...path, key].join("-")}`;
  const set = (key, value, structural = false) => {
    if (value === "" || value === null || value === undefined) delete node[key];
    else node[key] = value;
    (structural ? ctx.onStructure : ctx.onEdit)();
  };

  if (path.length === 0) {
    form.append(field("agent.description", "Summary",
      h("input", { id: "f-summary", value: ctx.summary(), placeholder: "Shown on the home page and in the agent list",
        oninput: (e) => ctx.setSummary(e.target.value) })));
  }
  const type = h("select", { id: id("type"), onchange: (e) => changeType(node, e.target.value, ctx) },
    Object.entries(AGENT_TYPES).map(([value, label]) => h("option", { value, selected: (node.type || "llm") === value }, label)));
  form.append(h("div", { class: "grid-2" },
    field("name", "Name", h("input", { id: id("name"), value: node.name || "", required: true, autocomplete: "off", spellcheck: "false",
      oninput: (e) => set("name", e.target.value) }), path.length ? "Unique in the tree." : "Also the agent's name in Studio."),
    field("type", "Type", type)));
  form.append(field("description", "Description", h("textarea", { id: id("description"), rows: 2, value: node.description || "",
    placeholder: "What this agent is for (other agents read it when they transfer)", oninput: (e) => set("description", e.target.value) })));

  if (MODEL_TYPES.has(node.type || "llm")) {
    form.append(field("model", "Model", h("select", { id: id("model"), onchange: (e) => set("model", e.target.value) },
      h("option", { value: "" }, "Choose a model…"),
      [...new Set([...ctx.models, ...(node.model ? [node.model] : [])])].map((name) => h("option", { value: name, selected: node.model === name }, name)))));
    form.append(field("instruction", "Instruction", h("textarea", { id: id("instruction"), rows: 7, value: node.instruction || "",
      placeholder: "You are a helpful assistant…", oninput: (e) => set("instruction", e.target.value) }),
      "{state_key} placeholders are filled from session state."));
    form.append(renderTools(ctx, node, path));
    form.append(h("div", { class: "grid-3" },
      field("planner", "Planner", h("select", { id: id("planner"), onchange: (e) => set("planner", e.target.value ? { type: e.target.value } : "") },
        [["", "None"], ["plan_react", "Plan-ReAct"], ["task", "Task list"]].map(([v, l]) => h("option", { value: v, selected: (node.planner?.type || "") === v }, l)))),
      field("output_key", "Output key", h("input", { id: id("output_key"), value: node.output_key || "", placeholder: "state key",
        oninput: (e) => set("output_key", e.target.value) })),
      field("max_iterations", "Max model calls / turn", numberInput(id("max_iterations"), node.max_iterations, (v) => set("max_iterations", v)))));
  } else if (node.type === "loop") {
    form.append(field("max_iterations", "Max passes", numberInput(id("max_iterations"), node.max_iterations, (v) => set("max_iterations", v))));
  }

  form.append(renderChildren(ctx, node, path, "sub_agents", MODEL_TYPES.has(node.type || "llm") ? "Sub-agents (it may transfer to them)" : "Steps"));
  if (MODEL_TYPES.has(node.type || "llm")) form.append(renderChildren(ctx, node, path, "agent_tools", "Agents as tools"));
  if (path.length === 0) form.append(renderLimits(ctx, node), renderApproval(ctx, node));
  return form;
}

function numberInput(id, value, onValue) {
  return h("input", { id, type: "number", min: "0", step: "any", value: value ?? "", inputmode: "decimal",
    oninput: (e) => onValue(e.target.value === "" ? "" : Number(e.target.value)) });
}

function changeType(node, type, ctx) {
  node.type = type;
  if (MODEL_TYPES.has(type)) {
    if (!node.model && ctx.models.length) node.model = ctx.models[0];
  } else {
    for (const key of ["model", "instruction", "tools", "planner", "agent_tools", "output_key"]) delete node[key];
    if (type !== "loop") delete node.max_iterations;
    node.sub_agents ||= [];
  }
  ctx.onStructure();
}

function renderTools(ctx, node, path) {
  const chosen = new Map((node.tools || []).map((t, i) => [t.name, [t, i]]));
  const items = ctx.tools.map((tool) => {
    const entry = chosen.get(tool.name);
    const ref = entry?.[0];
    const index = entry ? entry[1] : -1;
    const toggle = h("input", { type: "checkbox", id: `t-${dotted(path)}-${tool.name}`, checked: Boolean(ref),
      onchange: (e) => {
        node.tools ||= [];
        if (e.target.checked) node.tools.push({ name: tool.name });
        else node.tools = node.tools.filter((t) => t.name !== tool.name);
        if (!node.tools.length) delete node.tools;
        ctx.onStructure();
      } });
    const li = h("li", { dataset: { field: index >= 0 ? dotted([...path, "tools", index]) : "" } },
      h("label", { class: "check", for: toggle.id }, toggle, h("code", {}, tool.name)),
      h("p", { class: "desc" }, tool.description));
    if (ref) li.append(renderToolSettings(ctx, tool, ref, [...path, "tools", index]));
    return li;
  });
  const unknown = (node.tools || []).filter((t) => !ctx.tools.some((tool) => tool.name === t.name));
  for (const t of unknown) {
    items.push(h("li", { class: "field invalid", dataset: { field: dotted([...path, "tools", node.tools.indexOf(t)]) } },
      h("code", {}, t.name), h("p", { class: "desc" }, "Not a registered tool: remove it in the JSON editor.")));
  }
  return h("fieldset", { dataset: { field: dotted([...path, "tools"]) } }, h("legend", {}, "Tools"), h("ul", { class: "tool-list" }, items));
}

function renderToolSettings(ctx, tool, ref, path) {
  const props = tool.settings_schema?.properties || {};
  const settings = ref.settings || {};
  const update = (key, value) => {
    ref.settings ||= {};
    if (value === "" || value === undefined) delete ref.settings[key];
    else ref.settings[key] = value;
    if (!Object.keys(ref.settings).length) delete ref.settings;
    ctx.onEdit();
  };
  const controls = Object.entries(props).map(([key, schema]) => {
    const id = `ts-${dotted(path)}-${key}`;
    const label = schema.title || key;
    if (schema.type === "boolean") {
      return h("label", { class: "check", for: id }, h("input", { type: "checkbox", id, checked: settings[key] ?? schema.default ?? false,
        onchange: (e) => update(key, e.target.checked === Boolean(schema.default) ? undefined : e.target.checked) }), label);
    }
    const numeric = schema.type === "number" || schema.type === "integer";
    return h("label", { for: id }, label, h("input", { id, type: numeric ? "number" : "text", value: settings[key] ?? "",
      placeholder: schema.default !== undefined ? String(schema.default) : "",
      oninput: (e) => update(key, e.target.value === "" ? undefined : numeric ? Number(e.target.value) : e.target.value) }));
  });
  const approvalId = `ta-${dotted(path)}`;
  controls.push(h("label", { class: "check", for: approvalId }, h("input", { type: "checkbox", id: approvalId, checked: Boolean(ref.requires_approval),
    onchange: (e) => {
      if (e.target.checked) ref.requires_approval = true;
      else delete ref.requires_approval;
      ctx.onStructure();
    } }), "Needs approval"));
  return h("div", { class: "tool-settings", dataset: { field: dotted([...path, "settings"]) } }, controls);
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
  const inputs = LIMITS.map(([key, label]) => h("div", { class: "field", dataset: { field: `limits.${key}` } },
    h("label", { for: `l-${key}` }, label),
    numberInput(`l-${key}`, limits[key], (value) => {
      node.limits ||= {};
      if (value === "") delete node.limits[key];
      else node.limits[key] = value;
      if (!Object.keys(node.limits).length) delete node.limits;
      ctx.onEdit();
    })));
  return h("fieldset", { dataset: { field: "limits" } }, h("legend", {}, "Run limits"),
    h("p", { class: "hint" }, "Empty fields keep the defaults (50 steps, 100 model calls, 200 tool calls, 600 s)."),
    h("div", { class: "grid-3" }, inputs));
}

function renderApproval(ctx, node) {
  const approval = node.approval || {};
  const update = (key, value) => {
    node.approval ||= {};
    if (value === "") delete node.approval[key];
    else node.approval[key] = value;
    if (!Object.keys(node.approval).length) delete node.approval;
    ctx.onEdit();
  };
  return h("fieldset", { dataset: { field: "approval" } }, h("legend", {}, "Approvals"),
    h("p", { class: "hint" }, "For tools marked “Needs approval”: how long a request waits, and what happens then."),
    h("div", { class: "grid-2" },
      h("div", { class: "field", dataset: { field: "approval.timeout_s" } }, h("label", { for: "a-timeout" }, "Timeout (s)"),
        numberInput("a-timeout", approval.timeout_s, (v) => update("timeout_s", v))),
      h("div", { class: "field", dataset: { field: "approval.on_timeout" } }, h("label", { for: "a-on-timeout" }, "On timeout"),
        h("select", { id: "a-on-timeout", onchange: (e) => update("on_timeout", e.target.value) },
          [["", "Deny (default)"], ["approve", "Approve"], ["deny", "Deny"]].map(([v, l]) => h("option", { value: v, selected: (approval.on_timeout || "") === v }, l))))));
}

function renderRef(ctx, node, form) {
  form.append(h("p", {}, "A reference to your agent ", h("code", {}, node.ref),
    ": its current version runs here. Edit it in its own builder."),
  h("div", { class: "field", dataset: { field: dotted([...ctx.path, "ref"]) } },
    h("label", { for: "f-ref" }, "Agent"),
    h("select", { id: "f-ref", onchange: (e) => { node.ref = e.target.value; ctx.onStructure(); } },
      [...new Set([node.ref, ...ctx.agentNames])].map((name) => h("option", { value: name, selected: name === node.ref }, name)))));
  return form;
}
