// The builder's control fields (issue 18): an llm agent's structured output (spec
// "output_schema", "output_retries"), an agent's hooks ("hooks": [{name, settings?}],
// in order) and failure policies ("on_failure" on an agent, a tool or an MCP server).

import { h, pretty } from "./dom.js";
import { assign, controlId, field, numberInput, select } from "./spec_fields.js";
import { dotted } from "./spec_paths.js";
import { settingsFields } from "./spec_settings.js";

const CALL_FAILURES = [
  ["", "Go on: the model reads the error (default)"],
  ["degrade", "Degrade: go on, and the run ends degraded"],
  ["fail", "Fail the run"],
];
const AGENT_FAILURES = [
  ["", "Where it runs decides (default)"],
  ["fail", "Fail the run"],
  ["continue", "Go on: its parent carries on"],
  ["degrade", "Degrade: go on, and the run ends degraded"],
];

/** What a failed call of a tool or MCP server (``kind``), or a failed agent, does. */
export function failureField(ctx, ref, path, kind) {
  const at = [...path, "on_failure"];
  const agent = kind === "agent";
  const help = agent
    ? "Its model failing after retries, a hook raising, or an answer never matching its schema."
    : null;
  return field(at, agent ? "When this agent fails" : "When a call fails",
    select(controlId(at), agent ? AGENT_FAILURES : CALL_FAILURES, ref.on_failure || "", (value) => {
      assign(ref, "on_failure", value);
      ctx.onEdit();
    }), { help });
}

/** An llm agent's output schema: its answer must be JSON matching it. */
export function renderOutput(ctx, node, path) {
  const at = (key) => [...path, key];
  const schema = node.output_schema;
  const text = schema === undefined ? "" : typeof schema === "string" ? schema : pretty(schema);
  const box = h("textarea", { id: controlId(at("output_schema")), rows: 6, value: text, spellcheck: "false",
    class: "code", placeholder: '{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}',
    oninput: (e) => {
      const raw = e.target.value;
      let value = raw;
      try {
        value = raw.trim() ? JSON.parse(raw) : "";
      } catch {
        // Kept as text: the server's check says why it does not parse, at this field.
      }
      assign(node, "output_schema", value);
      ctx.onEdit();
    } });
  return h("fieldset", { class: "structured-output" }, h("legend", {}, "Structured output"),
    h("p", { class: "hint" }, "With a JSON Schema, the final answer must be JSON that matches it; the parsed value is kept under the output key. An answer that does not match is sent back with its problems."),
    field(at("output_schema"), "Output schema (JSON Schema)", box,
      { help: "No regular expressions, and no references outside the schema." }),
    field(at("output_retries"), "Corrective re-prompts", numberInput(controlId(at("output_retries")), node.output_retries,
      (v) => {
        assign(node, "output_retries", v === ctx.defaults.output_retries ? "" : v);
        ctx.onEdit();
      }, { placeholder: String(ctx.defaults.output_retries), min: "0", max: "5", step: "1" }),
    { help: "At most 5; then the agent fails." }));
}

/** The agent's hooks, in the order they run, each with its settings. */
export function renderHooks(ctx, node, path) {
  const refs = node.hooks || [];
  const structure = () => {
    if (!refs.length) delete node.hooks;
    ctx.onStructure();
  };
  const move = (from, to) => {
    const [item] = refs.splice(from, 1);
    refs.splice(to, 0, item);
    structure();
  };
  const items = refs.map((ref, index) => {
    const at = [...path, "hooks", index];
    const entry = ctx.hooks.find((hook) => hook.name === ref.name);
    const [checks, inputs] = entry ? settingsFields(ctx, entry.settings_schema, ref, at) : [[], []];
    return h("li", { class: entry ? null : "field invalid", dataset: { field: dotted(at) } },
      h("div", { class: "row" },
        h("span", { class: "grow" }, `${index + 1}. `, h("code", {}, ref.name)),
        h("button", { type: "button", class: "btn small ghost", "aria-label": `Move ${ref.name} up`, disabled: index === 0, onclick: () => move(index, index - 1) }, "↑"),
        h("button", { type: "button", class: "btn small ghost", "aria-label": `Move ${ref.name} down`, disabled: index === refs.length - 1, onclick: () => move(index, index + 1) }, "↓"),
        h("button", { type: "button", class: "btn small danger", onclick: () => {
          refs.splice(index, 1);
          structure();
        } }, "Remove")),
      h("p", { class: "desc" }, entry ? entry.description : "Not a registered hook."),
      entry && (checks.length || inputs.length)
        ? h("div", { class: "tool-settings", dataset: { field: dotted([...at, "settings"]) } },
          checks, inputs.length ? h("div", { class: "grid-2" }, inputs) : null)
        : null);
  });
  const picker = h("select", { id: controlId([...path, "hooks", "add"]), "aria-label": "Hook to add" },
    h("option", { value: "" }, "Add a hook…"), ctx.hooks.map((hook) => h("option", { value: hook.name }, hook.name)));
  const add = () => {
    if (!picker.value) return;
    (node.hooks ||= []).push({ name: picker.value });
    ctx.onStructure();
  };
  return h("fieldset", { dataset: { field: dotted([...path, "hooks"]) } }, h("legend", {}, "Hooks"),
    h("p", { class: "hint" }, "They run in this order around every model and tool call, each seeing what the one before changed; the timeline marks what they changed."),
    items.length ? h("ul", { class: "tool-list hook-list" }, items) : null,
    h("div", { class: "row hook-add" }, picker, h("button", { type: "button", class: "btn small", onclick: add }, "Add hook")));
}

const TOOL_ON_TIMEOUT = [["", "As the agent says"], ["deny", "Deny it"], ["approve", "Approve it"]];

/** With "Needs approval" checked, this tool's own time-out and outcome (else the
 *  agent's): approval_timeout_s and approval_on_timeout on a tool or MCP reference. */
export function toolApprovalFields(ctx, ref, path) {
  if (!ref.requires_approval) return null;
  const edit = (key, value) => {
    assign(ref, key, value);
    ctx.onEdit();
  };
  const seconds = [...path, "approval_timeout_s"];
  const outcome = [...path, "approval_on_timeout"];
  return h("div", { class: "grid-2" },
    field(seconds, "Waits at most (s)", numberInput(controlId(seconds), ref.approval_timeout_s,
      (v) => edit("approval_timeout_s", v), { placeholder: "the agent's" }),
    { help: "From the request, even while the run is parked or the server restarts." }),
    field(outcome, "Then", select(controlId(outcome), TOOL_ON_TIMEOUT, ref.approval_on_timeout || "",
      (v) => edit("approval_on_timeout", v))));
}
