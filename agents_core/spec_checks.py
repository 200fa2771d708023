"""``check_spec``: every problem of an ``AgentSpec``, each at its path inside the spec.

It resolves the names a spec uses (models, registered tools and hooks, MCP servers,
other agents) and checks the rules no schema can state: what each agent type takes,
unique names, reference cycles, tool and hook settings, output schemas. ``builder``
builds only specs this passes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from agents_core.exceptions import SpecError
from agents_core.hooks import HookRegistry
from agents_core.prompts import InMemoryTemplateStore, TemplateStore
from agents_core.skills import InMemorySkillStore, SkillStore
from agents_core.specs import MODEL_TYPES, AgentRef, AgentSpec, McpRef, ToolRef
from agents_core.structured import schema_problems
from agents_core.tools.registry import ToolRegistry

Path = tuple[str | int, ...]
MAX_DEPTH = 12
MAX_AGENTS = 200
_WORKFLOW_LACKS = (
    "model", "instruction", "tools", "mcp", "agent_tools", "planner", "output_key",
    "output_schema", "hooks", "policies", "fallback_models", "cache", "instruction_template",
    "memory", "skills",
)  # fmt: skip


def check_spec(
    spec: AgentSpec,
    *,
    models: Collection[str],
    tools: ToolRegistry,
    agents: Mapping[str, AgentSpec] | None = None,
    mcp_servers: Collection[str] = (),
    hooks: HookRegistry | None = None,
    templates: TemplateStore | None = None,
    skills: SkillStore | None = None,
) -> list[SpecError]:
    """Every problem in ``spec``, each with its path; empty when the spec can be built.
    ``mcp_servers`` are the names an ``McpRef`` may use, ``hooks`` the hooks a
    ``HookRef`` may name, ``templates`` the prompt templates a ``TemplateRef`` may,
    ``skills`` the skills a ``SkillRef`` may."""
    checker = _Checker(
        models,
        tools,
        known_agents(agents),
        mcp_servers,
        hooks or HookRegistry(),
        templates or InMemoryTemplateStore(),
        skills or InMemorySkillStore(),
    )
    checker.visit(spec, (), depth=0, refs=())
    return checker.problems


NO_AGENTS: Mapping[str, AgentSpec] = MappingProxyType({})


def known_agents(agents: Mapping[str, AgentSpec] | None) -> Mapping[str, AgentSpec]:
    """``agents``, or none when not given. Tested against ``None``, not for truth: a
    mapping that reads each agent on demand would count them all to answer that."""
    return NO_AGENTS if agents is None else agents


def resolve(node: AgentSpec | AgentRef, agents: Mapping[str, AgentSpec]) -> AgentSpec | None:
    if isinstance(node, AgentSpec):
        return node
    return agents.get(node.ref)


@dataclass(slots=True)
class _Checker:
    models: Collection[str]
    tools: ToolRegistry
    agents: Mapping[str, AgentSpec]
    mcp_servers: Collection[str]
    hooks: HookRegistry
    templates: TemplateStore
    skills: SkillStore
    problems: list[SpecError] = field(default_factory=list)
    names: dict[str, Path] = field(default_factory=dict)

    def fail(self, path: Path, message: str) -> None:
        self.problems.append(SpecError(message, path=path))

    def visit(self, spec: AgentSpec, path: Path, *, depth: int, refs: tuple[str, ...]) -> None:
        if depth > MAX_DEPTH:
            self.fail(path, f"agent trees may be at most {MAX_DEPTH} levels deep")
            return
        if len(self.names) >= MAX_AGENTS:
            self.fail(path, f"agent trees may have at most {MAX_AGENTS} agents")
            return
        if spec.name in self.names:
            where = ".".join(map(str, self.names[spec.name])) or "<root>"
            self.fail((*path, "name"), f"agent name {spec.name!r} is already used at {where}")
        else:
            self.names[spec.name] = path
        self.check_type_rules(spec, path, root=depth == 0)
        self.check_tools(spec, path)
        self.check_mcp(spec, path)
        for index, child in enumerate(spec.agent_tools):
            self.visit(child, (*path, "agent_tools", index), depth=depth + 1, refs=refs)
        for index, node in enumerate(spec.sub_agents):
            child_path = (*path, "sub_agents", index)
            if isinstance(node, AgentRef):
                if node.ref in refs:
                    cycle = " -> ".join((*refs, node.ref))
                    self.fail((*child_path, "ref"), f"agent references form a cycle: {cycle}")
                    continue
                target = self.agents.get(node.ref)
                if target is None:
                    self.fail((*child_path, "ref"), f"no agent named {node.ref!r} to reference")
                    continue
                self.visit(target, child_path, depth=depth + 1, refs=(*refs, node.ref))
            else:
                self.visit(node, child_path, depth=depth + 1, refs=refs)

    def check_type_rules(self, spec: AgentSpec, path: Path, *, root: bool) -> None:
        if spec.limits is not None and not root:
            self.fail((*path, "limits"), "limits apply to a whole run: set them on the root agent")
        if spec.budget is not None and not root:
            self.fail(
                (*path, "budget"), "a budget applies to a whole run: set it on the root agent"
            )
        if spec.compaction is not None:
            self.check_compaction(spec, path, root=root)
        if spec.memory is not None and spec.memory.save_at_end and not root:
            self.fail(
                (*path, "memory", "save_at_end"),
                "saving key facts ends a whole turn: set it on the root agent",
            )
        if spec.type in MODEL_TYPES:
            self.check_model_agent(spec, path)
        else:
            self.check_workflow_agent(spec, path)

    def check_compaction(self, spec: AgentSpec, path: Path, *, root: bool) -> None:
        compaction = spec.compaction
        if not root:
            self.fail(
                (*path, "compaction"),
                "compaction applies to a whole session: set it on the root agent",
            )
        elif (
            compaction is not None
            and compaction.model is not None
            and compaction.model not in self.models
        ):
            known = ", ".join(sorted(self.models)) or "none configured"
            self.fail(
                (*path, "compaction", "model"),
                f"unknown model {compaction.model!r} (known: {known})",
            )

    def check_model_agent(self, spec: AgentSpec, path: Path) -> None:
        if spec.model is None:
            self.fail((*path, "model"), f"a {spec.type} agent needs a model")
        elif spec.model not in self.models:
            known = ", ".join(sorted(self.models)) or "none configured"
            self.fail((*path, "model"), f"unknown model {spec.model!r} (known: {known})")
        self.check_fallbacks(spec, path)
        self.check_template(spec, path)
        self.check_skills(spec, path)
        if spec.type == "react":
            for key in ("sub_agents", "planner", "output_schema"):
                if getattr(spec, key):
                    self.fail((*path, key), f"a react agent takes no {key}")
        elif spec.output_schema is not None:
            self.check_output_schema(spec, path)
        self.check_hooks(spec, path)

    def check_fallbacks(self, spec: AgentSpec, path: Path) -> None:
        chain = [spec.model] if spec.model else []
        for index, name in enumerate(spec.fallback_models):
            where = (*path, "fallback_models", index)
            if name not in self.models:
                known = ", ".join(sorted(self.models)) or "none configured"
                self.fail(where, f"unknown model {name!r} (known: {known})")
            elif name in chain:
                self.fail(where, f"model {name!r} is already in this agent's chain")
            chain.append(name)

    def check_template(self, spec: AgentSpec, path: Path) -> None:
        ref = spec.instruction_template
        if ref is None:
            return
        if spec.instruction:
            self.fail(
                (*path, "instruction_template"),
                "an agent takes its instruction from a template or writes it, not both",
            )
        if self.templates.get(ref.name, ref.version) is None:
            which = f"{ref.name!r}" + (f" version {ref.version}" if ref.version else "")
            self.fail((*path, "instruction_template", "name"), f"no prompt template {which}")

    def check_skills(self, spec: AgentSpec, path: Path) -> None:
        seen: set[str] = set()
        for index, ref in enumerate(spec.skills):
            where = (*path, "skills", index, "name")
            if ref.name in seen:
                self.fail(where, f"skill {ref.name!r} is attached twice")
            elif self.skills.get(ref.name, ref.version) is None:
                which = f"{ref.name!r}" + (f" version {ref.version}" if ref.version else "")
                self.fail(where, f"no skill {which}")
            seen.add(ref.name)

    def check_output_schema(self, spec: AgentSpec, path: Path) -> None:
        for where, message in schema_problems(spec.output_schema):
            self.fail((*path, "output_schema", *where), message)
        if not spec.output_key:
            self.fail(
                (*path, "output_key"),
                "an agent with an output schema needs an output key: the state key its "
                "parsed answer is kept under",
            )

    def check_hooks(self, spec: AgentSpec, path: Path) -> None:
        for index, ref in enumerate(spec.hooks):
            hook_path = (*path, "hooks", index)
            entry = self.hooks.get(ref.name)
            if entry is None:
                known = ", ".join(e.name for e in self.hooks) or "none"
                self.fail((*hook_path, "name"), f"unknown hook {ref.name!r} (registered: {known})")
                continue
            self.check_settings(hook_path, entry.parse_settings, ref.settings)

    def check_workflow_agent(self, spec: AgentSpec, path: Path) -> None:
        if not spec.sub_agents:
            self.fail((*path, "sub_agents"), f"a {spec.type} agent needs at least one sub-agent")
        for key in _WORKFLOW_LACKS:
            if getattr(spec, key):
                self.fail((*path, key), f"a {spec.type} agent has no {key}; give it to a sub-agent")
        if spec.approval is not None:
            self.fail((*path, "approval"), f"a {spec.type} agent calls no tools itself")
        if spec.max_iterations is not None and spec.type != "loop":
            self.fail((*path, "max_iterations"), f"a {spec.type} agent has no max_iterations")

    def check_tools(self, spec: AgentSpec, path: Path) -> None:
        seen: set[str] = set()
        for index, ref in enumerate(spec.tools):
            tool_path = (*path, "tools", index)
            entry = self.tools.get(ref.name)
            if entry is None:
                known = ", ".join(e.name for e in self.tools) or "none"
                self.fail((*tool_path, "name"), f"unknown tool {ref.name!r} (registered: {known})")
                continue
            if ref.name in seen:
                self.fail((*tool_path, "name"), f"tool {ref.name!r} is listed twice")
            seen.add(ref.name)
            self.check_settings(tool_path, entry.parse_settings, ref.settings)
            self.check_tool_approval(ref, tool_path)

    def check_tool_approval(self, ref: ToolRef | McpRef, path: Path) -> None:
        """A tool's own approval time-out goes with its approval."""
        if ref.requires_approval:
            return
        for name in ("approval_timeout_s", "approval_on_timeout"):
            if getattr(ref, name) is not None:
                self.fail((*path, name), "only a tool whose calls need approval has a time-out")

    def check_settings(
        self, path: Path, parse: Callable[[dict[str, Any]], BaseModel | None], raw: dict[str, Any]
    ) -> None:
        """A registry entry's settings, each problem at its path under ``settings``."""
        try:
            parse(raw)
        except ValidationError as exc:
            for err in exc.errors():
                self.fail((*path, "settings", *err["loc"]), err["msg"])
        except ValueError as exc:
            self.fail((*path, "settings"), str(exc))

    def check_mcp(self, spec: AgentSpec, path: Path) -> None:
        seen: set[tuple[str, str]] = set()
        for index, ref in enumerate(spec.mcp):
            ref_path = (*path, "mcp", index)
            if ref.server not in self.mcp_servers:
                known = ", ".join(sorted(self.mcp_servers)) or "none registered"
                self.fail((*ref_path, "server"), f"unknown MCP server {ref.server!r} ({known})")
            if (ref.server, ref.prefix) in seen:
                self.fail((*ref_path, "server"), f"MCP server {ref.server!r} is listed twice")
            seen.add((ref.server, ref.prefix))
            self.check_tool_approval(ref, ref_path)
            if ref.tools is not None and len(set(ref.tools)) != len(ref.tools):
                self.fail((*ref_path, "tools"), "a tool is listed twice")
