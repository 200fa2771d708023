// An LLM or ReAct agent's instruction: written in the form, or taken from one of the
// user's prompt templates (spec "instruction_template": {name, version?}). A template
// with no version is pinned to its latest version when the agent is saved; the preview
// renders it against sample state through the API, and shows the result as text.

import { ApiError, api } from "./api.js";
import { h } from "./dom.js";
import { controlId, field, select } from "./spec_fields.js";

const WRITTEN = "";

export function renderInstruction(ctx, node, path, set) {
  const at = (key) => [...path, key];
  const ref = node.instruction_template;
  const names = ctx.templates.map((t) => t.name);
  if (ref && !names.includes(ref.name)) names.push(ref.name);
  const source = select(controlId(at("instruction_template")),
    [[WRITTEN, "Written here"], ...names.map((name) => [name, `Template: ${name}`])],
    ref?.name ?? WRITTEN, (name) => {
      if (name === WRITTEN) delete node.instruction_template;
      else {
        node.instruction_template = { name };
        delete node.instruction;
      }
      ctx.onStructure();
    });
  const block = [field(at("instruction_template"), "Instruction from", source, {
    help: h("span", {}, "Write it here, or use a ", h("a", { href: ctx.urls.prompt_templates }, "prompt template"),
      " rendered with the session state before each model call.") })];
  if (!ref) {
    block.push(field(at("instruction"), "Instruction", h("textarea", { id: controlId(at("instruction")), rows: 7,
      value: node.instruction || "", placeholder: "You are a helpful assistant…", oninput: (e) => set("instruction", e.target.value) }),
    { help: "{state_key} placeholders are filled from session state." }));
  } else {
    block.push(renderTemplateUse(ctx, node, path, ref));
  }
  return block;
}

function renderTemplateUse(ctx, node, path, ref) {
  const latest = ctx.templates.find((t) => t.name === ref.name)?.version;
  const pinned = ref.version
    ? h("p", { class: "help", dataset: { testid: "template-pin" } }, `This agent renders version ${ref.version}`,
      latest && latest > ref.version ? h("span", {}, ` (latest: ${latest}). `,
        h("button", { type: "button", class: "btn small", onclick: () => {
          node.instruction_template = { name: ref.name };
          ctx.onStructure();
        } }, `Use version ${latest} when saved`)) : ".")
    : h("p", { class: "help", dataset: { testid: "template-pin" } },
      latest ? `Saving pins the latest version (${latest}).` : "No such template: create it first.");
  const id = controlId([...path, "template_state"]);
  const state = h("textarea", { id, rows: 3, class: "code", spellcheck: "false", value: "{}" });
  const out = h("pre", { class: "preview-text", dataset: { testid: "template-preview" } }, "");
  out.hidden = true;
  const run = h("button", { type: "button", class: "btn small" }, "Preview");
  run.addEventListener("click", () => preview(ctx, ref, state.value, out));
  return h("div", { class: "template-use" }, pinned,
    h("div", { class: "field" }, h("label", { for: id }, "Sample state (JSON)"), state),
    h("div", { class: "row" }, run), out);
}

async function preview(ctx, ref, stateText, out) {
  out.hidden = false;
  out.classList.remove("error");
  let state;
  try {
    state = JSON.parse(stateText || "{}");
  } catch (error) {
    return show(out, `The sample state is not valid JSON: ${error.message}`);
  }
  const body = { name: ref.name, state, ...(ref.version ? { version: ref.version } : {}) };
  try {
    const result = await api(ctx.urls.prompt_preview, { method: "POST", body });
    out.textContent = result.text;
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    show(out, error.errors.map((e) => e.detail).join("\n") || error.message);
  }
}

function show(out, message) {
  out.classList.add("error");
  out.textContent = message;
}
