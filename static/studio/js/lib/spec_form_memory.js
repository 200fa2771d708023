// The builder's memory fieldset: the memory tools (remember, recall, forget_memory) and,
// on the root agent, saving each turn's key facts. In the spec: `memory: {}` is the tools
// on (their default), `{tools: false, save_at_end: true}` key facts only, no `memory` off.
import { h } from "./dom.js";
import { checkbox, controlId } from "./spec_fields.js";
import { dotted } from "./spec_paths.js";

export function renderMemory(ctx, node, path) {
  const at = (key) => [...path, "memory", key];
  const current = () => ({
    tools: Boolean(node.memory) && node.memory.tools !== false,
    save: Boolean(node.memory?.save_at_end),
  });
  const update = ({ tools, save }) => {
    if (!tools && !save) delete node.memory;
    else node.memory = { ...(tools ? {} : { tools: false }), ...(save ? { save_at_end: true } : {}) };
    ctx.onEdit();
  };
  const now = current();
  const saveBox = h("div", { dataset: { field: dotted(at("save_at_end")) } },
    checkbox(controlId(at("save_at_end")), "Save each turn's key facts as memories", now.save,
      (checked) => update({ ...current(), save: checked })));
  return h("fieldset", { dataset: { field: dotted([...path, "memory"]) } }, h("legend", {}, "Memory"),
    h("p", { class: "hint" }, "What this agent remembers of its user across sessions (see Memories)."),
    h("div", { dataset: { field: dotted(at("tools")) } },
      checkbox(controlId(at("tools")), "Memory tools: remember, recall, forget", now.tools,
        (checked) => update({ ...current(), tools: checked }))),
    ...(path.length === 0 ? [saveBox] : []));
}
