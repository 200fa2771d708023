"""Turns an ``AgentSpec`` into agents, resolving model, tool and agent names.

``check_spec`` lists every problem with its path inside the spec; ``build_agent`` raises
the first as a ``SpecError``. Both only ever instantiate registered tools.

MCP servers are named too: ``check_spec`` takes the names the caller knows, and
``build_agent`` the tools of each server, already connected (an ``McpToolset`` opened
for the run), so building stays synchronous and never connects anywhere.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agents_core.agents.base import BaseAgent
from agents_core.agents.llm import LlmAgent
from agents_core.agents.loop import LoopAgent
from agents_core.agents.parallel import ParallelAgent
from agents_core.agents.react import ReActAgent
from agents_core.agents.sequential import SequentialAgent
from agents_core.approvals import ApprovalPolicy
from agents_core.exceptions import SpecError
from agents_core.llm.contracts import BaseLlm
from agents_core.planners.base import BasePlanner
from agents_core.planners.plan_react import PlanReActPlanner
from agents_core.planners.task import TaskPlanner
from agents_core.specs import MODEL_TYPES, AgentRef, AgentSpec, McpRef, PlannerSpec
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.base import BaseTool
from agents_core.tools.registry import ToolRegistry

Path = tuple[str | int, ...]
MAX_DEPTH = 12
MAX_AGENTS = 200
DEFAULT_MAX_ITERATIONS = 10
DEFAULT_LOOP_ITERATIONS = 5


def check_spec(
    spec: AgentSpec,
    *,
    models: Collection[str],
    tools: ToolRegistry,
    agents: Mapping[str, AgentSpec] | None = None,
    mcp_servers: Collection[str] = (),
) -> list[SpecError]:
    """Every problem in ``spec``, each with its path; empty when the spec can be built.
    ``mcp_servers`` are the names an ``McpRef`` may use."""
    checker = _Checker(models, tools, agents or {}, mcp_servers)
    checker.visit(spec, (), depth=0, refs=())
    return checker.problems


def build_agent(
    spec: AgentSpec,
    *,
    models: Mapping[str, BaseLlm],
    tools: ToolRegistry,
    agents: Mapping[str, AgentSpec] | None = None,
    mcp_tools: Mapping[str, Sequence[BaseTool]] | None = None,
) -> BaseAgent:
    """Build the agent tree; ``SpecError`` (with ``path``) names the first problem.
    ``mcp_tools`` holds the tools of each connected MCP server, by the server's name."""
    mcp_tools = mcp_tools or {}
    problems = check_spec(
        spec, models=models.keys(), tools=tools, agents=agents, mcp_servers=mcp_tools.keys()
    )
    if problems:
        first = problems[0]
        if len(problems) > 1:
            first.message += f" (and {len(problems) - 1} more problems)"
        raise first
    return _Builder(models, tools, agents or {}, mcp_tools).build(spec)


def mcp_server_names(spec: AgentSpec, agents: Mapping[str, AgentSpec] | None = None) -> set[str]:
    """Every MCP server the tree names, through agent references too: what a caller
    connects before ``build_agent``. Unresolvable references and cycles are skipped
    (``check_spec`` reports them)."""
    found: set[str] = set()
    pending: list[tuple[AgentSpec, tuple[str, ...]]] = [(spec, ())]
    while pending:
        node, refs = pending.pop()
        found.update(ref.server for ref in node.mcp)
        pending.extend((child, refs) for child in node.agent_tools)
        for child in node.sub_agents:
            if isinstance(child, AgentSpec):
                pending.append((child, refs))
            elif child.ref not in refs and (target := (agents or {}).get(child.ref)):
                pending.append((target, (*refs, child.ref)))
    return found


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
        if spec.type in MODEL_TYPES:
            self.check_model_agent(spec, path)
        else:
            self.check_workflow_agent(spec, path)

    def check_model_agent(self, spec: AgentSpec, path: Path) -> None:
        if spec.model is None:
            self.fail((*path, "model"), f"a {spec.type} agent needs a model")
        elif spec.model not in self.models:
            known = ", ".join(sorted(self.models)) or "none configured"
            self.fail((*path, "model"), f"unknown model {spec.model!r} (known: {known})")
        if spec.type == "react":
            for key in ("sub_agents", "planner"):
                if getattr(spec, key):
                    self.fail((*path, key), f"a react agent takes no {key}")

    def check_workflow_agent(self, spec: AgentSpec, path: Path) -> None:
        if not spec.sub_agents:
            self.fail((*path, "sub_agents"), f"a {spec.type} agent needs at least one sub-agent")
        for key in ("model", "instruction", "tools", "mcp", "agent_tools", "planner", "output_key"):
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
            try:
                entry.parse_settings(ref.settings)
            except ValidationError as exc:
                for err in exc.errors():
                    where = (*tool_path, "settings", *err["loc"])
                    self.fail(where, err["msg"])
            except ValueError as exc:
                self.fail((*tool_path, "settings"), str(exc))

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
            if ref.tools is not None and len(set(ref.tools)) != len(ref.tools):
                self.fail((*ref_path, "tools"), "a tool is listed twice")


@dataclass(slots=True)
class _Builder:
    models: Mapping[str, BaseLlm]
    tools: ToolRegistry
    agents: Mapping[str, AgentSpec]
    mcp_tools: Mapping[str, Sequence[BaseTool]]

    def build(self, spec: AgentSpec) -> BaseAgent:
        children = [self.build(self._resolve(node)) for node in spec.sub_agents]
        match spec.type:
            case "sequential":
                return SequentialAgent(spec.name, sub_agents=children, description=spec.description)
            case "parallel":
                return ParallelAgent(spec.name, sub_agents=children, description=spec.description)
            case "loop":
                return LoopAgent(
                    spec.name,
                    sub_agents=children,
                    description=spec.description,
                    max_iterations=spec.max_iterations or DEFAULT_LOOP_ITERATIONS,
                )
            case "react":
                tools, _ = self._tools(spec)
                return ReActAgent(spec.name, **self._model_agent_args(spec, tools))
            case "llm":
                tools, gated = self._tools(spec)
                return LlmAgent(
                    spec.name,
                    **self._model_agent_args(spec, tools),
                    planner=_planner(spec.planner),
                    approval=_approval_policy(spec, gated),
                    sub_agents=children,
                )

    def _model_agent_args(self, spec: AgentSpec, tools: list[BaseTool]) -> dict[str, Any]:
        """What LlmAgent and ReActAgent are both built from."""
        return {
            "model": self.models[spec.model or ""],
            "instruction": spec.instruction,
            "description": spec.description,
            "tools": tools,
            "output_key": spec.output_key,
            "max_iterations": spec.max_iterations or DEFAULT_MAX_ITERATIONS,
        }

    def _resolve(self, node: AgentSpec | AgentRef) -> AgentSpec:
        resolved = resolve(node, self.agents)
        if resolved is None:  # check_spec rejected this already
            raise SpecError("unresolved agent reference")
        return resolved

    def _tools(self, spec: AgentSpec) -> tuple[list[BaseTool], frozenset[str]]:
        """The agent's tools, and the names of those whose calls need approval."""
        built: list[BaseTool] = []
        gated: set[str] = set()
        for ref in spec.tools:
            entry = self.tools.get(ref.name)
            if entry is None:  # check_spec rejected this already
                continue
            created = entry.create(ref.settings)
            built.extend(created)
            if ref.requires_approval:
                gated.update(tool.name for tool in created)
        for mcp_ref in spec.mcp:
            offered = self._mcp(spec, mcp_ref)
            built.extend(offered)
            if mcp_ref.requires_approval:
                gated.update(tool.name for tool in offered)
        built.extend(AgentTool(self.build(child)) for child in spec.agent_tools)
        _check_unique_names(spec, built)
        return built, frozenset(gated)

    def _mcp(self, spec: AgentSpec, ref: McpRef) -> list[BaseTool]:
        """The server's tools the reference picks, named with its prefix."""
        offered = {tool.name: tool for tool in self.mcp_tools[ref.server]}
        names = list(offered) if ref.tools is None else ref.tools
        if missing := [name for name in names if name not in offered]:
            raise SpecError(
                f"agent {spec.name!r}: MCP server {ref.server!r} has no tool named "
                f"{', '.join(missing)}; it offers: {', '.join(sorted(offered)) or 'none'}"
            )
        return [_renamed(offered[name], ref.prefix + name) for name in names]


def _renamed(tool: BaseTool, name: str) -> BaseTool:
    if tool.name == name:
        return tool
    renamed = copy.copy(tool)
    renamed.name = name
    return renamed


def _check_unique_names(spec: AgentSpec, tools: list[BaseTool]) -> None:
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            raise SpecError(
                f"agent {spec.name!r} has two tools named {tool.name!r}: give an MCP server "
                "a prefix",
            )
        seen.add(tool.name)


def _planner(spec: PlannerSpec | None) -> BasePlanner | None:
    if spec is None:
        return None
    return PlanReActPlanner() if spec.type == "plan_react" else TaskPlanner()


def _approval_policy(spec: AgentSpec, names: frozenset[str]) -> ApprovalPolicy | None:
    if not names:
        return None
    if spec.approval is None:
        return ApprovalPolicy(tools=names)
    return ApprovalPolicy(
        tools=names, timeout_s=spec.approval.timeout_s, on_timeout=spec.approval.on_timeout
    )
