// The agent builder: a form for one node of the spec, the JSON of the whole spec and a
// tree preview, kept in sync both ways; live validation by the server (the API's own
// rules) with each problem shown at its field and spec path; save, version history,
// diff and restore.

import { api, ApiError } from "./lib/api.js";
import { h, pretty, readJsonScript } from "./lib/dom.js";
import { clearFieldErrors, showFieldErrors } from "./lib/forms.js";
import { renderNodeForm } from "./lib/spec_form.js";
import { dotted, getAt, locate, nodePathOf, parseDotted } from "./lib/spec_paths.js";
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
let errors = [];
let touched = Boolean(agent);
let validation = 0;

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
    tools: data.tools,
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
  };
}

function renderForm() {
  const node = getAt(spec, selected);
  $("node-form").replaceChildren(renderNodeForm(context()));
  $("form-heading").textContent = selected.length ? (node?.ref ? `Reference: ${node.ref}` : node?.name || "Agent") : "Root agent";
  $("form-path").textContent = selected.length ? dotted(selected) : "";
  $("select-parent").hidden = !selected.length;
  showErrors(false);
}

function renderTreePane() {
  const invalid = errors.filter((e) => e.specPath !== null).map((e) => dotted(nodePathOf(parseDotted(e.specPath))));
  const errorsShown = new Set(touched ? invalid : []);
  $("tree").replaceChildren(renderTree(spec, { selected, onSelect: select, agents: data.agents, invalid: errorsShown }));
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
  touched = true;
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
    showValidity("bad", "The JSON does not parse");
    return;
  }
  editor.removeAttribute("aria-invalid");
  status.textContent = "";
  if (JSON.stringify(parsed) === JSON.stringify(spec)) return;
  spec = parsed;
  if (!getAt(spec, selected)) selected = [];
  renderForm();
  changed();
}

// Validation (the server's rules, without saving)

let validateTimer = null;
function scheduleValidation() {
  clearTimeout(validateTimer);
  showValidity("busy", "Checking…");
  validateTimer = setTimeout(validate, VALIDATE_DELAY_MS);
}

async function validate() {
  const ticket = ++validation;
  try {
    const result = await api(data.urls.validate, {
      method: "POST",
      body: { id: agent?.id, name: spec.name ?? "", description: summary, spec },
    });
    if (ticket !== validation) return;
    setErrors(result.errors);
  } catch (error) {
    if (ticket === validation) showValidity("bad", error.message);
  }
}

/** API paths name the agent's fields ("name", "description") or spots in the spec
 * ("spec.sub_agents.0.model"); the form names spec fields by their spec path. */
function setErrors(apiErrors) {
  errors = apiErrors.map((e) => {
    const path = e.path || "";
    let field = path;
    let specPath = null;
    if (path === "spec" || path.startsWith("spec.")) specPath = field = path.slice(5);
    else if (path === "name") specPath = "name";
    else if (path === "description" || path === "note") field = `agent.${path}`;
    return { ...e, field, specPath };
  });
  showErrors(false);
  renderTreePane();
  if (errors.length) showValidity("bad", `${errors.length} problem${errors.length === 1 ? "" : "s"}`);
  else showValidity("ok", "Valid");
}

function showErrors(focus) {
  clearFieldErrors(formPane);
  const box = $("problems-box");
  box.hidden = !touched || !errors.length;
  if (!touched) return;
  showFieldErrors(formPane, errors.map((e) => ({ path: e.field, detail: e.detail })), { focus });
  $("problems-title").textContent = `${errors.length} problem${errors.length === 1 ? "" : "s"} to fix before saving:`;
  $("problems").replaceChildren(...errors.map((e) => h("li", {},
    h("button", { type: "button", onclick: () => goTo(e) }, h("code", {}, e.path || "agent"), e.detail))));
}

function goTo(error) {
  if (error.specPath !== null) select(nodePathOf(parseDotted(error.specPath)));
  showErrors(true);
  if (error.specPath === null) return;
  const { text, ranges } = locate(spec);
  const range = ranges.get(error.specPath) || ranges.get(dotted(parseDotted(error.specPath).slice(0, -1)));
  if (range && editor.value === text) {
    editor.setSelectionRange(range[0], range[1]);
    const line = text.slice(0, range[0]).split("\n").length;
    editor.scrollTop = Math.max(0, (line - 4) * parseFloat(getComputedStyle(editor).lineHeight));
  }
}

function showValidity(kind, text) {
  const el = $("validity");
  el.className = `status-line ${kind === "ok" ? "" : kind}`;
  el.lastElementChild.textContent = text;
}

// Saving and restoring

async function save(body, message) {
  if (editor.getAttribute("aria-invalid")) {
    toast("Fix the JSON before saving.", { error: true });
    return;
  }
  touched = true;
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
    setErrors(error.errors.length ? error.errors : [{ path: "", detail: error.message }]);
    showErrors(true);
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
