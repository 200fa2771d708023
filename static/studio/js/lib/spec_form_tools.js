// The registered tools an agent may call (spec "tools": [{name, settings?,
// requires_approval?, on_failure?}]): one checkbox each, and for a chosen tool its
// settings (from its settings schema), whether its calls need approval and what a
// failed call does.

import { h } from "./dom.js";
import { assign, checkbox, controlId } from "./spec_fields.js";
import { failureField, toolApprovalFields } from "./spec_form_control.js";
import { dotted } from "./spec_paths.js";
import { settingsFields } from "./spec_settings.js";

export function renderTools(ctx, node, path) {
  const chosen = new Map((node.tools || []).map((t, i) => [t.name, [t, i]]));
  const items = ctx.tools.map((tool) => {
    const [ref, index] = chosen.get(tool.name) || [null, -1];
    const toggle = checkbox(`t-${dotted(path)}-${tool.name}`, h("code", {}, tool.name), Boolean(ref), (checked) => {
      node.tools ||= [];
      if (checked) node.tools.push({ name: tool.name });
      else node.tools = node.tools.filter((t) => t.name !== tool.name);
      if (!node.tools.length) delete node.tools;
      ctx.onStructure();
    });
    const li = h("li", { dataset: { field: ref ? dotted([...path, "tools", index]) : "" } },
      toggle, h("p", { class: "desc" }, tool.description));
    if (ref) li.append(renderToolSettings(ctx, tool, ref, [...path, "tools", index]));
    return li;
  });
  (node.tools || []).forEach((t, index) => {
    if (ctx.tools.some((tool) => tool.name === t.name)) return;
    items.push(h("li", { class: "field invalid", dataset: { field: dotted([...path, "tools", index]) } },
      h("code", {}, t.name), h("p", { class: "desc" }, "Not a registered tool."),
      h("button", { type: "button", class: "btn small danger", onclick: () => {
        node.tools.splice(index, 1);
        if (!node.tools.length) delete node.tools;
        ctx.onStructure();
      } }, "Remove")));
  });
  return h("fieldset", { dataset: { field: dotted([...path, "tools"]) } }, h("legend", {}, "Tools"),
    h("ul", { class: "tool-list" }, items));
}

function renderToolSettings(ctx, tool, ref, path) {
  const [checks, inputs] = settingsFields(ctx, tool.settings_schema, ref, path);
  const approval = [...path, "requires_approval"];
  return h("div", { class: "tool-settings", dataset: { field: dotted([...path, "settings"]) } },
    checks, inputs.length ? h("div", { class: "grid-2" }, inputs) : null,
    h("div", { dataset: { field: dotted(approval) } }, checkbox(controlId(approval), "Needs approval",
      Boolean(ref.requires_approval), (checked) => {
        assign(ref, "requires_approval", checked);
        if (!checked) for (const key of ["approval_timeout_s", "approval_on_timeout"]) delete ref[key];
        ctx.onStructure(); // its time-out fields come and go with it
      })),
    toolApprovalFields(ctx, ref, path),
    failureField(ctx, ref, path, "tool"));
}
