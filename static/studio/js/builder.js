// The agent builder: a form for one node of the spec, the JSON of the whole spec and a
// tree preview, kept in sync both ways; live validation by the server (the API's own
// rules) with each problem shown at its field and spec path, once the person touched
// that field or tried to save (lib/spec_problems.js); save, version history, diff and
// restore.

import { api, ApiError } from "./lib/api.js";
import { h, pretty, readJsonScript } from "./lib/dom.js";
import { renderNodeForm } from "./lib/spec_form.js";
import { changedPaths, dotted, getAt, locate, nodePathOf, parseDotted } from "./lib/spec_paths.js";
import { Problems } from "./lib/spec_problems.js";
import { renderTree } from "./lib/spec_tree.js";
import { confirmDialog, toast } from "./lib/ui.js";
import { Versions } from "./lib/versions.js";

const VALIDATE_DELAY_MS = 350;
const JSON_DELAY_MS = 250;

const data = readJsonScript("builder-data");
const $ = (id) => document.getElementById(id);
const editor = $("json-editor");
const formPane = $("node-form").closest(".pane-body");

let agent = data.agent;
let spec = structuredClone(agent?.spec ?? { type: "llm", name: "", model: data.models[0], instruction: "" });
let summary = agent?.description ?? "";
let selected = [];
let snapshot = "";
let validation = 0;

const problems = new Problems({
  status: $("validity"),
  text: $("validity-text"),
  count: $("problems-count"),
  box: $("problems-box"),
  title: $("problems-title"),
  list: $("problems"),
  form: formPane,
  onGoTo: goTo,
});
if (agent) problems.showEverything();

// A field counts as touched once it is changed or left; capture, as a change may
// re-render the form before the event would bubble up.
function touchField(event) {
  const field = event.target.closest?.("[data-field]:not([data-field=''])");
  if (field) problems.touch(field.dataset.field);
}
formPane.addEventListener("input", touchField, true);
formPane.addEventListener("change", touchField, true);
formPane.addEventListener("focusout", (event) => {
  touchField(event);
  if (!validateTimer) problems.render();
}, true);

const versions = new Versions({
  list: $("versions"),
  empty: $("versions-empty"),
  from: $("compare-from"),
  to: $("compare-to"),
  compare: $("compare"),
  dialog: $("diff-dialog"),
  dialogTitle: $("diff-title"),
  dialogBody: $("diff-body"),
  onRestore: restore,
});
$("diff-close").addEventListener("click", () => $("diff-dialog").close());

// Rendering

function context() {
  return {
    spec,
    path: selected,
    models: data.models,
    templates: data.templates,
    skills: data.skills,
    tools: data.tools,
    hooks: data.hooks,
    mcpServers: data.mcp_servers,
    rules: data.rules,
    defaults: data.defaults,
    urls: data.urls,
    agentNames: Object.keys(data.agents).sort(),
    allNames: () => collectNames(spec),
    summary: () => summary,
    setSummary: (value) => {
      summary = value;
      changed();
    },
    select,
    onEdit: changed,
    onStructure: () => {
      renderForm();
      changed();
    },
    rerender: renderForm,
  };
}

function renderForm() {
  const node = getAt(spec, selected);
  $("node-form").replaceChildren(renderNodeForm(context()));
  $("form-heading").textContent = selected.length ? (node?.ref ? `Reference: ${node.ref}` : node?.name || "Agent") : "Root agent";
  $("form-path").textContent = selected.length ? dotted(selected) : "";
  $("select-parent").hidden = !selected.length;
  problems.render();
}

function renderTreePane() {
  $("tree").replaceChildren(renderTree(spec, { selected, onSelect: select, agents: data.agents, invalid: problems.invalidNodes() }));
}

function renderJson() {
  if (document.activeElement !== editor) editor.value = pretty(spec);
}

function renderHeader() {
  $("agent-title").textContent = spec.name || (agent ? agent.name : "New agent");
  const badge = $("version-badge");
  badge.hidden = !agent;
  if (agent) badge.textContent = `v${agent.current_version}`;
  $("dirty-badge").hidden = current() === snapshot;
  for (const id of ["try-it", "export"]) $(id).hidden = !agent;
  if (agent) {
    $("try-it").href = `${data.urls.playground}?agent=${agent.id}`;
    $("export").href = `${data.urls.agents}${agent.id}/export/`;
  }
}

function renderAll() {
  renderForm();
  renderTreePane();
  renderJson();
  renderHeader();
}

function select(path) {
  selected = getAt(spec, path) ? path : [];
  renderForm();
  renderTreePane();
}

function current() {
  return JSON.stringify({ spec, summary });
}

function collectNames(node, names = []) {
  if (!node || typeof node !== "object") return names;
  if (node.name) names.push(node.name);
  for (const child of [...(node.sub_agents || []), ...(node.agent_tools || [])]) collectNames(child, names);
  return names;
}

// Changes from the form and from the JSON editor

function changed() {
  renderJson();
  renderTreePane();
  renderHeader();
  scheduleValidation();
}

let jsonTimer = null;
editor.addEventListener("input", () => {
  clearTimeout(jsonTimer);
  jsonTimer = setTimeout(readEditor, JSON_DELAY_MS);
});
editor.addEventListener("blur", () => {
  clearTimeout(jsonTimer);
  readEditor();
});

function readEditor() {
  let parsed;
  let problem = null;
  try {
    parsed = JSON.parse(editor.value);
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) problem = "the spec must be a JSON object";
  } catch (error) {
    problem = error.message;
  }
  const status = $("json-status");
  if (problem !== null) {
    status.textContent = `Invalid JSON: ${problem}`;
    status.className = "error";
    editor.setAttribute("aria-invalid", "true");
    problems.setStatus("bad", "The JSON does not parse");
    return;
  }
  editor.removeAttribute("aria-invalid");
  status.textContent = "";
  if (JSON.stringify(parsed) === JSON.stringify(spec)) return;
  for (const path of changedPaths(spec, parsed)) problems.touch(path);
  spec = parsed;
  if (!getAt(spec, selected)) selected = [];
  renderForm();
  changed();
}

// Validation (the server's rules, without saving)

let validateTimer = null;
function scheduleValidation() {
  clearTimeout(validateTimer);
  problems.setStatus("busy", "Checking…");
  validateTimer = setTimeout(validate, VALIDATE_DELAY_MS);
}

async function validate() {
  validateTimer = null;
  const ticket = ++validation;
  try {
    const result = await api(data.urls.validate, {
      method: "POST",
      body: { id: agent?.id, name: spec.name ?? "", description: summary, spec },
    });
    if (ticket !== validation) return;
    setErrors(result.errors);
  } catch (error) {
    if (ticket === validation) problems.setStatus("bad", error.message);
  }
}

function setErrors(apiErrors, { open = false } = {}) {
  problems.set(apiErrors);
  if (open) problems.openList();
  else problems.render();
  renderTreePane();
}

function goTo(error) {
  if (error.specPath !== null) select(nodePathOf(parseDotted(error.specPath)));
  problems.render({ focus: error });
  if (error.specPath === null) return;
  const { text, ranges } = locate(spec);
  const range = ranges.get(error.specPath) || ranges.get(dotted(parseDotted(error.specPath).slice(0, -1)));
  if (range && editor.value === text) {
    editor.setSelectionRange(range[0], range[1]);
    const line = text.slice(0, range[0]).split("\n").length;
    editor.scrollTop = Math.max(0, (line - 4) * parseFloat(getComputedStyle(editor).lineHeight));
  }
}

// Saving and restoring

async function save(body, message) {
  if (editor.getAttribute("aria-invalid")) {
    toast("Fix the JSON before saving.", { error: true });
    return;
  }
  problems.showEverything();
  const previous = agent?.current_version;
  try {
    const saved = agent
      ? await api(`${data.urls.agents}${agent.id}/`, { method: "PATCH", body })
      : await api(data.urls.agents, { method: "POST", body });
    if (!agent) window.history.replaceState(null, "", data.urls.builder.replace(/new\/$/, `${saved.id}/`));
    agent = saved;
    spec = structuredClone(saved.spec);
    summary = saved.description;
    snapshot = current();
    $("version-note").value = "";
    if (!getAt(spec, selected)) selected = [];
    setErrors([]);
    renderAll();
    versions.load(`${data.urls.agents}${agent.id}/versions/`, agent.current_version);
    toast(saved.current_version === previous ? `No changes: still version ${previous}.` : message(saved.current_version));
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    setErrors(error.errors.length ? error.errors : [{ path: "", detail: error.message }], { open: true });
    toast(`Not saved: ${error.message}`, { error: true });
  }
}

function saveCurrent() {
  const body = { name: spec.name ?? "", description: summary, spec, note: $("version-note").value.trim() };
  return save(body, (number) => `Saved version ${number}.`);
}

async function restore(version) {
  const ok = await confirmDialog(`Restore version ${version.number}? It is saved as a new version; nothing is lost.`,
    { action: `Restore v${version.number}`, danger: false });
  if (!ok) return;
  await save({ spec: version.spec, note: `restored from v${version.number}` }, (number) => `Restored v${version.number} as version ${number}.`);
}

$("save").addEventListener("click", saveCurrent);
document.addEventListener("keydown", (event) => {
  if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
    event.preventDefault();
    if (document.activeElement === editor) readEditor();
    saveCurrent();
  }
});
$("select-parent").addEventListener("click", () => select(selected.slice(0, -2)));

// Tabs

for (const [tab, panel] of [["tab-json", "json-panel"], ["tab-history", "history-panel"]]) {
  $(tab).addEventListener("click", () => {
    for (const [other, otherPanel] of [["tab-json", "json-panel"], ["tab-history", "history-panel"]]) {
      $(other).setAttribute("aria-selected", String(other === tab));
      $(otherPanel).hidden = otherPanel !== panel;
    }
  });
}

snapshot = agent ? current() : JSON.stringify({ spec, summary: "" });
renderAll();
scheduleValidation();
if (agent) versions.load(`${data.urls.agents}${agent.id}/versions/`, agent.current_version);
else $("f-name")?.focus();
document.body.dataset.ready = "builder";
