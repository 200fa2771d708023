// The builder's policy rules (spec "policies": agents_core.policies): each rule names
// what it applies to (model, tool or agent calls, by a name pattern), conditions on the
// call's arguments, and what it does (allow, deny, rewrite, ask a person). The server
// checks every rule; its errors land at their field (policies.0.when.1.value ...).

import { h, pretty } from "./dom.js";
import { assign, controlId, field, numberInput, select, textInput } from "./spec_fields.js";
import { dotted } from "./spec_paths.js";

const TARGETS = [["tool", "Tool calls"], ["agent", "Sub-agent calls"], ["model", "Model calls"]];
const ACTIONS = [["deny", "Deny"], ["ask", "Ask a person"], ["rewrite", "Rewrite arguments"], ["allow", "Allow"]];
const OPERATORS = [
  ["eq", "="], ["ne", "≠"], ["gt", ">"], ["ge", "≥"], ["lt", "<"], ["le", "≤"],
  ["in", "is one of"], ["not_in", "is none of"], ["contains", "contains"],
  ["starts_with", "starts with"], ["not_starts_with", "does not start with"],
  ["matches", "matches (regex)"], ["exists", "is given"], ["missing", "is not given"],
];
const NO_VALUE = new Set(["exists", "missing"]);

/** A typed value: JSON when it parses (numbers, lists, true), else the text itself. */
function parsed(raw) {
  if (!raw.trim()) return "";
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function shown(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function conditionRow(ctx, rule, at, index) {
  const condition = rule.when[index];
  const here = [...at, "when", index];
  const edit = (key, value) => {
    assign(condition, key, value);
    ctx.onEdit();
  };
  const remove = () => {
    rule.when.splice(index, 1);
    if (!rule.when.length) delete rule.when;
    ctx.onStructure();
  };
  return h("li", { class: "condition", dataset: { field: dotted(here) } },
    h("div", { class: "grid-3" },
      field([...here, "arg"], "Argument", textInput(controlId([...here, "arg"]), condition.arg,
        (v) => edit("arg", v), { placeholder: "amount or payment.to" })),
      field([...here, "op"], "Test", select(controlId([...here, "op"]), OPERATORS, condition.op || "eq",
        (v) => {
          condition.op = v;
          if (NO_VALUE.has(v)) delete condition.value;
          ctx.onStructure();
        })),
      NO_VALUE.has(condition.op)
        ? h("div")
        : field([...here, "value"], "Value", textInput(controlId([...here, "value"]), shown(condition.value),
          (v) => edit("value", parsed(v)), { placeholder: '100, "/srv/docs/" or ["a", "b"]' }))),
    h("button", { type: "button", class: "btn small ghost", onclick: remove }, "Remove condition"));
}

function rewriteField(ctx, rule, at) {
  const text = rule.set === undefined ? "" : typeof rule.set === "string" ? rule.set : pretty(rule.set);
  const box = h("textarea", { id: controlId([...at, "set"]), rows: 3, value: text, spellcheck: "false", class: "code",
    placeholder: '{"amount": 100}',
    oninput: (e) => {
      assign(rule, "set", parsed(e.target.value));
      ctx.onEdit();
    } });
  return field([...at, "set"], "Arguments to set (JSON)", box,
    { help: "Merged over the model's arguments before the call runs." });
}

function ruleItem(ctx, node, path, index) {
  const rules = node.policies;
  const rule = rules[index];
  const at = [...path, "policies", index];
  const edit = (key, value) => {
    assign(rule, key, value);
    ctx.onEdit();
  };
  const structural = (key, value) => {
    assign(rule, key, value);
    if (rule.action !== "rewrite") delete rule.set;
    ctx.onStructure();
  };
  const conditions = (rule.when || []).map((_, i) => conditionRow(ctx, rule, at, i));
  const move = (to) => {
    const [item] = rules.splice(index, 1);
    rules.splice(to, 0, item);
    ctx.onStructure();
  };
  return h("li", { class: "policy-rule", dataset: { field: dotted(at) } },
    h("div", { class: "row" },
      h("span", { class: "grow" }, `${index + 1}. `, h("code", {}, rule.name || "unnamed rule")),
      h("button", { type: "button", class: "btn small ghost", "aria-label": `Move rule ${index + 1} up`, disabled: index === 0, onclick: () => move(index - 1) }, "↑"),
      h("button", { type: "button", class: "btn small ghost", "aria-label": `Move rule ${index + 1} down`, disabled: index === rules.length - 1, onclick: () => move(index + 1) }, "↓"),
      h("button", { type: "button", class: "btn small danger", onclick: () => {
        rules.splice(index, 1);
        if (!rules.length) delete node.policies;
        ctx.onStructure();
      } }, "Remove")),
    h("div", { class: "grid-3" },
      field([...at, "name"], "Rule name", textInput(controlId([...at, "name"]), rule.name, (v) => edit("name", v)),
        { required: true }),
      field([...at, "target"], "Applies to", select(controlId([...at, "target"]), TARGETS, rule.target || "tool",
        (v) => structural("target", v === "tool" ? "" : v))),
      field([...at, "match"], "Names matching", textInput(controlId([...at, "match"]), rule.match,
        (v) => edit("match", v), { placeholder: "* (any)" }), { help: "* and ? are wildcards." })),
    h("div", { class: "grid-3" },
      field([...at, "action"], "Then", select(controlId([...at, "action"]), ACTIONS, rule.action || "deny",
        (v) => structural("action", v)), { help: "Allow stops later rules; a denied call does not run." }),
      field([...at, "priority"], "Priority", numberInput(controlId([...at, "priority"]), rule.priority,
        (v) => edit("priority", v === 0 ? "" : v), { placeholder: "0", min: "-1000", max: "1000", step: "1" }),
      { help: "Higher first; equals in this order." }),
      field([...at, "reason"], "Reason", textInput(controlId([...at, "reason"]), rule.reason,
        (v) => edit("reason", v), { placeholder: "Shown to the model on a denial" }))),
    rule.action === "rewrite" ? rewriteField(ctx, rule, at) : null,
    h("div", { class: "conditions", dataset: { field: dotted([...at, "when"]) } },
      h("p", { class: "hint" }, conditions.length ? "Only when every condition holds:" : "On every matching call."),
      conditions.length ? h("ul", { class: "condition-list" }, conditions) : null,
      h("button", { type: "button", class: "btn small", onclick: () => {
        (rule.when ||= []).push({ arg: "", op: "eq", value: "" });
        ctx.onStructure();
      } }, "Add condition")));
}

/** The agent's policy rules: the first that applies to a call decides. */
export function renderPolicies(ctx, node, path) {
  const rules = node.policies || [];
  const items = rules.map((_, index) => ruleItem(ctx, node, path, index));
  const add = () => {
    const name = `rule_${rules.length + 1}`;
    (node.policies ||= []).push({ name, action: "deny" });
    ctx.onStructure();
  };
  return h("fieldset", { class: "policies", dataset: { field: dotted([...path, "policies"]) } },
    h("legend", {}, "Policies"),
    h("p", { class: "hint" }, "Rules on this agent's calls. The first rule that applies decides (highest priority first); a call no rule applies to goes ahead. The timeline records every decision."),
    items.length ? h("ol", { class: "tool-list policy-list" }, items) : null,
    h("div", { class: "row" }, h("button", { type: "button", class: "btn small", onclick: add }, "Add rule")));
}
