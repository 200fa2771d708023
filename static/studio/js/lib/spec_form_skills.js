// The builder's skills fieldset: which of the user's skills an LLM or ReAct agent may
// load (spec "skills": [{name, version?}]). A skill picked here has no version until the
// agent is saved, when it is pinned to the latest; an agent version keeps its pin.
import { h } from "./dom.js";
import { checkbox, controlId } from "./spec_fields.js";
import { dotted } from "./spec_paths.js";

export function renderSkills(ctx, node, path) {
  const attached = node.skills || [];
  const known = ctx.skills.map((skill) => skill.name);
  const missing = attached.filter((ref) => !known.includes(ref.name))
    .map((ref) => ({ name: ref.name, description: "(no such skill: upload it again or untick it)" }));
  const toggle = (name, on) => {
    const kept = (node.skills || []).filter((ref) => ref.name !== name);
    node.skills = on ? [...kept, { name }] : kept;
    if (!node.skills.length) delete node.skills;
    ctx.onStructure();
  };
  const rows = [...ctx.skills, ...missing].map((skill) => {
    const ref = attached.find((r) => r.name === skill.name);
    const pin = ref?.version
      ? ` (v${ref.version}${skill.version && skill.version > ref.version ? `; latest v${skill.version}` : ""})`
      : "";
    const at = [...path, "skills", skill.name];
    return h("div", { class: "skill-choice", dataset: { skill: skill.name } },
      checkbox(controlId(at), `${skill.name}${pin}`, Boolean(ref), (checked) => toggle(skill.name, checked)),
      h("p", { class: "hint" }, skill.description));
  });
  return h("fieldset", { dataset: { field: dotted([...path, "skills"]) } }, h("legend", {}, "Skills"),
    h("p", { class: "hint" }, "The agent sees each ticked skill's name and description, and loads the rest with its load_skill tool. ",
      h("a", { href: ctx.urls.skills }, "Manage skills")),
    ...(rows.length ? rows : [h("p", { class: "muted" }, "No skills yet.")]));
}
