// The MCP servers an agent may use (spec "mcp": [{server, tools?, prefix?,
// requires_approval?, on_failure?}]), chosen among the owner's registered servers: for
// each, the tools to offer (every tool it lists, or some: typed, or picked once the
// server was asked for its list, which shows the <server>__* tools of its resources and
// prompts too), a prefix for their names, whether their calls need
// approval and what a failed call does.

import { api } from "./api.js";
import { h } from "./dom.js";
import { assign, checkbox, controlId, field, textInput } from "./spec_fields.js";
import { failureField, toolApprovalFields } from "./spec_form_control.js";
import { dotted } from "./spec_paths.js";

/** What each server said when asked for its tools: {busy} | {tools} | {error}, by name. */
const listed = new Map();

export function renderMcp(ctx, node, path) {
  const refs = (node.mcp || []).map((ref, index) => [ref, index]);
  const items = ctx.mcpServers.flatMap((server) => {
    const own = refs.filter(([ref]) => ref.server === server.name);
    if (!own.length) return [serverItem(ctx, node, path, server, null, -1)];
    return own.map(([ref, index]) => serverItem(ctx, node, path, server, ref, index));
  });
  for (const [ref, index] of refs) {
    if (!ctx.mcpServers.some((server) => server.name === ref.server)) items.push(unknownItem(ctx, node, path, ref, index));
  }
  const body = items.length
    ? h("ul", { class: "tool-list" }, items)
    : h("p", { class: "hint" }, "You have no MCP servers yet. ",
      h("a", { href: ctx.urls.mcp_servers }, "Register one"), " to let agents use its tools.");
  return h("fieldset", { dataset: { field: dotted([...path, "mcp"]) } }, h("legend", {}, "MCP servers"), body);
}

function removeRef(ctx, node, index) {
  node.mcp.splice(index, 1);
  if (!node.mcp.length) delete node.mcp;
  ctx.onStructure();
}

function serverItem(ctx, node, path, server, ref, index) {
  const at = [...path, "mcp", index];
  const id = ref ? controlId(at) : `${controlId([...path, "mcp"])}-${server.name}`;
  const toggle = checkbox(id, h("code", {}, server.name), Boolean(ref), (checked) => {
    if (!checked) return removeRef(ctx, node, index);
    (node.mcp ||= []).push({ server: server.name });
    ctx.onStructure();
  });
  const about = server.description || (server.transport === "stdio" ? "A local process." : "An HTTP server.");
  const li = h("li", { dataset: { field: ref ? dotted(at) : "" } }, toggle, h("p", { class: "desc" }, about));
  if (ref) li.append(refSettings(ctx, server, ref, at));
  return li;
}

function unknownItem(ctx, node, path, ref, index) {
  return h("li", { class: "field invalid", dataset: { field: dotted([...path, "mcp", index]) } },
    h("code", {}, ref.server), h("p", { class: "desc" }, "Not one of your MCP servers."),
    h("button", { type: "button", class: "btn small danger", onclick: () => removeRef(ctx, node, index) }, "Remove"));
}

function refSettings(ctx, server, ref, path) {
  const edit = (key, value) => {
    assign(ref, key, value);
    ctx.onEdit();
  };
  const approval = [...path, "requires_approval"];
  return h("div", { class: "tool-settings" },
    toolsField(ctx, server, ref, [...path, "tools"]),
    field([...path, "prefix"], "Tool name prefix", textInput(controlId([...path, "prefix"]), ref.prefix,
      (value) => edit("prefix", value), { placeholder: "none" }),
    { help: `${ctx.rules.prefix} Put before each of its tools' names, for two servers that offer the same one.` }),
    h("div", { dataset: { field: dotted(approval) } }, checkbox(controlId(approval), "Needs approval",
      Boolean(ref.requires_approval), (checked) => {
        assign(ref, "requires_approval", checked);
        if (!checked) for (const key of ["approval_timeout_s", "approval_on_timeout"]) delete ref[key];
        ctx.onStructure(); // its time-out fields come and go with it
      })),
    toolApprovalFields(ctx, ref, path),
    failureField(ctx, ref, path, "mcp"));
}

function toolsField(ctx, server, ref, path) {
  const id = controlId(path);
  const state = listed.get(server.name) || {};
  const ask = h("button", { type: "button", class: "btn small", disabled: Boolean(state.busy),
    onclick: () => listTools(ctx, server) }, state.busy ? "Asking…" : state.tools ? "Ask again" : "List its tools");
  const help = state.tools ? "With every one checked, the agent gets every tool the server lists, now and later."
    : "Names separated by commas; empty: every tool it lists.";
  const label = state.tools
    ? h("span", { class: "label", id: `${id}-label` }, "Tools")
    : h("label", { for: id }, "Tools");
  return h("div", { class: "field", dataset: { field: dotted(path) } },
    h("div", { class: "label-row" }, label, ask),
    state.tools ? toolPicker(ctx, ref, state.tools, id) : textInput(id, (ref.tools || []).join(", "), (value) => {
      const names = value.split(/[\s,]+/).filter(Boolean);
      assign(ref, "tools", names.length ? names : "");
      ctx.onEdit();
    }, { placeholder: "every tool it lists" }),
    h("div", { class: "notes" }, h("p", { class: "help" }, help),
      state.error ? h("p", { class: "help error" }, `Could not list its tools: ${state.error}`) : null));
}

function toolPicker(ctx, ref, tools, id) {
  const names = [...new Set([...tools.map((t) => t.name), ...(ref.tools || [])])];
  const chosen = new Set(ref.tools ?? names);
  const toggle = (name, on) => {
    if (on) chosen.add(name);
    else chosen.delete(name);
    const every = names.every((n) => chosen.has(n)) && names.length === tools.length;
    assign(ref, "tools", every ? "" : names.filter((n) => chosen.has(n)));
    ctx.onEdit();
  };
  return h("ul", { class: "pick-list", id, role: "group", "aria-labelledby": `${id}-label` }, names.map((name, i) => {
    const tool = tools.find((t) => t.name === name);
    return h("li", {}, checkbox(`${id}-${i}`, h("code", {}, name), chosen.has(name), (on) => toggle(name, on)),
      h("span", { class: "desc" }, tool ? tool.description : "not in the server's list"));
  }));
}

async function listTools(ctx, server) {
  listed.set(server.name, { busy: true });
  ctx.rerender();
  let state;
  try {
    const check = await api(server.tools_url, { method: "POST" });
    state = check.ok ? { tools: [...check.tools, ...contextTools(server.name, check)] } : { error: check.detail };
  } catch (error) {
    state = { error: error.message };
  }
  listed.set(server.name, state);
  ctx.rerender();
}

/** The tools a run adds for the server's resources and prompts (studio.mcp.context). */
function contextTools(serverName, check) {
  const named = (items) => items.slice(0, 5).map((item) => item.name).join(", ") + (items.length > 5 ? ", …" : "");
  const tools = [];
  if (check.resources?.length) {
    tools.push({ name: `${serverName}__list_resources`, description: `Lists its resources: ${named(check.resources)}` });
    tools.push({ name: `${serverName}__read_resource`, description: "Reads one of its resources by URI, as text." });
  }
  if (check.prompts?.length) {
    tools.push({ name: `${serverName}__list_prompts`, description: `Lists its prompts: ${named(check.prompts)}` });
    tools.push({ name: `${serverName}__get_prompt`, description: "Gets one of its prompts, filled in with arguments." });
  }
  return tools;
}
