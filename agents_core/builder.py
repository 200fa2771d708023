"""Turns an ``AgentSpec`` into agents, resolving model, tool, hook and agent names.

``check_spec`` (``agents_core.spec_checks``) lists every problem with its path inside
the spec; ``build_agent`` raises the first as a ``SpecError``. Both only ever
instantiate registered tools and hooks.

MCP servers are named too: ``check_spec`` takes the names the caller knows, and
``build_agent`` the tools of each server, already connected (an ``McpToolset`` opened
for the run), so building stays synchronous and never connects anywhere.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents_core.agents.base import BaseAgent
from agents_core.agents.llm import InstructionProvider, LlmAgent
from agents_core.agents.loop import LoopAgent
from agents_core.agents.parallel import ParallelAgent
from agents_core.agents.react import ReActAgent
from agents_core.agents.sequential import SequentialAgent
from agents_core.approvals import ApprovalPolicy, Verdict
from agents_core.compaction import CompactionConfig
from agents_core.exceptions import SpecError
from agents_core.history import HistoryCache
from agents_core.hooks import Hook, HookRegistry
from agents_core.llm.chain import ModelChain, ModelLink
from agents_core.llm.contracts import BaseLlm
from agents_core.memory import KeyFacts, memory_tools
from agents_core.planners.base import BasePlanner
from agents_core.planners.plan_react import PlanReActPlanner
from agents_core.planners.task import TaskPlanner
from agents_core.prompts import InMemoryTemplateStore, InstructionTemplate, TemplateStore
from agents_core.skills import InMemorySkillStore, Skill, SkillStore, skill_tools, with_skills
from agents_core.spec_checks import check_spec, known_agents, resolve
from agents_core.specs import AgentRef, AgentSpec, CompactionSpec, McpRef, PlannerSpec, ToolRef
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.base import BaseTool
from agents_core.tools.registry import ToolRegistry

__all__ = [
    "build_agent",
    "build_compaction",
    "build_key_facts",
    "check_spec",
    "compaction_model",
    "mcp_server_names",
    "resolve",
]

DEFAULT_MAX_ITERATIONS = 10
DEFAULT_LOOP_ITERATIONS = 5

Gated = dict[str, tuple[float | None, Verdict | None]]
"""Tools whose calls need approval, by name: their own time-out and outcome, if any."""


def build_agent(
    spec: AgentSpec,
    *,
    models: Mapping[str, BaseLlm],
    tools: ToolRegistry,
    agents: Mapping[str, AgentSpec] | None = None,
    mcp_tools: Mapping[str, Sequence[BaseTool]] | None = None,
    hooks: HookRegistry | None = None,
    templates: TemplateStore | None = None,
    skills: SkillStore | None = None,
    histories: HistoryCache | None = None,
) -> BaseAgent:
    """Build the agent tree; ``SpecError`` (with ``path``) names the first problem.
    ``mcp_tools`` holds the tools of each connected MCP server, by the server's name;
    ``hooks`` the hooks specs may name, ``templates`` their prompt templates, ``skills``
    their skills; ``histories`` the history cache its LLM agents share (each keeps its
    own without it)."""
    mcp_tools = mcp_tools or {}
    hooks = hooks or HookRegistry()
    templates = templates or InMemoryTemplateStore()
    skills = skills or InMemorySkillStore()
    problems = check_spec(
        spec,
        models=models.keys(),
        tools=tools,
        agents=agents,
        mcp_servers=mcp_tools.keys(),
        hooks=hooks,
        templates=templates,
        skills=skills,
    )
    if problems:
        first = problems[0]
        if len(problems) > 1:
            first.message += f" (and {len(problems) - 1} more problems)"
        raise first
    agents = known_agents(agents)
    found = _Builder(models, tools, agents, mcp_tools, hooks, templates, skills, histories)
    return found.build(spec)


def build_compaction(
    spec: AgentSpec,
    *,
    models: Mapping[str, BaseLlm],
    agents: Mapping[str, AgentSpec] | None = None,
) -> CompactionConfig | None:
    """How sessions of ``spec`` are compacted (``CompactionSpec``: on by default), or
    ``None`` when it is off or the tree names no model to summarise with."""
    wanted = spec.compaction or CompactionSpec()
    name = compaction_model(spec, agents)
    if name is None or name not in models:
        return None
    return CompactionConfig(
        summarizer=models[name],
        threshold=wanted.threshold,
        keep_last=wanted.keep_last,
        model_name=name,
        cache_ttl_s=spec.cache.ttl_s if spec.cache else None,
    )


def build_key_facts(spec: AgentSpec, *, models: Mapping[str, BaseLlm]) -> KeyFacts | None:
    """Who writes the key facts of ``spec``'s turns (its root's model, for its root's
    memory), or ``None`` unless its ``memory`` asks for them."""
    model = models.get(spec.model or "")
    if spec.memory is None or not spec.memory.save_at_end or model is None:
        return None
    return KeyFacts(model=model, agent=spec.name)


def compaction_model(spec: AgentSpec, agents: Mapping[str, AgentSpec] | None = None) -> str | None:
    """The name of the model that summarises sessions of ``spec`` (its compaction's
    ``model``, else the first model named in the tree), or ``None`` when compaction is
    off or the tree names no model."""
    wanted = spec.compaction or CompactionSpec()
    if not wanted.enabled:
        return None
    return wanted.model or _first_model(spec, known_agents(agents))


def _first_model(spec: AgentSpec, agents: Mapping[str, AgentSpec]) -> str | None:
    """The first model named in the tree, depth first (references followed once)."""
    stack: list[AgentSpec] = [spec]
    seen: set[str] = set()
    while stack:
        node = stack.pop(0)
        if node.model is not None:
            return node.model
        for child in [*node.agent_tools, *node.sub_agents]:
            if isinstance(child, AgentRef):
                if child.ref in seen:
                    continue  # a cycle of references: check_spec reports it
                seen.add(child.ref)
            if (resolved := resolve(child, agents)) is not None:
                stack.append(resolved)
    return None


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
            elif child.ref not in refs and (target := known_agents(agents).get(child.ref)):
                pending.append((target, (*refs, child.ref)))
    return found


@dataclass(slots=True)
class _Builder:
    models: Mapping[str, BaseLlm]
    tools: ToolRegistry
    agents: Mapping[str, AgentSpec]
    mcp_tools: Mapping[str, Sequence[BaseTool]]
    hooks: HookRegistry
    templates: TemplateStore
    skills: SkillStore
    histories: HistoryCache | None

    def build(self, spec: AgentSpec) -> BaseAgent:
        children = [self.build(self._resolve(node)) for node in spec.sub_agents]
        common: dict[str, Any] = {"description": spec.description, "on_failure": spec.on_failure}
        match spec.type:
            case "sequential":
                return SequentialAgent(spec.name, sub_agents=children, **common)
            case "parallel":
                return ParallelAgent(spec.name, sub_agents=children, **common)
            case "loop":
                return LoopAgent(
                    spec.name,
                    sub_agents=children,
                    max_iterations=spec.max_iterations or DEFAULT_LOOP_ITERATIONS,
                    **common,
                )
            case "react":
                return ReActAgent(spec.name, **self._model_agent_args(spec))
            case "llm":
                return LlmAgent(
                    spec.name,
                    **self._model_agent_args(spec),
                    planner=_planner(spec.planner),
                    sub_agents=children,
                    output_schema=spec.output_schema,
                    output_retries=spec.output_retries,
                    histories=self.histories,
                )

    def _model_agent_args(self, spec: AgentSpec) -> dict[str, Any]:
        """What LlmAgent and ReActAgent are both built from."""
        tools, gated, failures = self._tools(spec)
        instruction: str | InstructionProvider = self._instruction(spec)
        if spec.skills:
            attached = [self._skill(ref.name, ref.version) for ref in spec.skills]
            tools.extend(skill_tools(attached, self.skills))
            _check_unique_names(spec, tools)
            instruction = with_skills(instruction, attached)
        return {
            "model": self._chain(spec),
            "instruction": instruction,
            "description": spec.description,
            "tools": tools,
            "output_key": spec.output_key,
            "max_iterations": spec.max_iterations or DEFAULT_MAX_ITERATIONS,
            "hooks": [self._hook(ref.name, ref.settings) for ref in spec.hooks],
            "tool_failures": failures,
            "on_failure": spec.on_failure,
            "policies": spec.policies,
            "approval": _approval_policy(spec, gated),
        }

    def _instruction(self, spec: AgentSpec) -> str | InstructionTemplate:
        ref = spec.instruction_template
        if ref is None:
            return spec.instruction
        template = self.templates.get(ref.name, ref.version)
        if template is None:  # check_spec rejected this already
            raise SpecError(f"no prompt template {ref.name!r}")
        return InstructionTemplate(template)

    def _skill(self, name: str, version: int | None) -> Skill:
        skill = self.skills.get(name, version)
        if skill is None:  # check_spec rejected this already
            raise SpecError(f"no skill {name!r}")
        return skill

    def _chain(self, spec: AgentSpec) -> ModelChain:
        """The agent's model, its fallbacks after it, and its response cache."""
        names = [spec.model or "", *spec.fallback_models]
        links = [ModelLink(name, self.models[name]) for name in names]
        return ModelChain(links, cache_ttl_s=spec.cache.ttl_s if spec.cache else None)

    def _hook(self, name: str, settings: dict[str, Any]) -> Hook:
        entry = self.hooks.get(name)
        if entry is None:  # check_spec rejected this already
            raise SpecError(f"unknown hook {name!r}")
        return entry.create(settings)

    def _resolve(self, node: AgentSpec | AgentRef) -> AgentSpec:
        resolved = resolve(node, self.agents)
        if resolved is None:  # check_spec rejected this already
            raise SpecError("unresolved agent reference")
        return resolved

    def _tools(self, spec: AgentSpec) -> tuple[list[BaseTool], Gated, dict[str, str]]:
        """The agent's tools, those whose calls need approval (by name, with their own
        time-out and outcome), and the failure policy of each registered or MCP tool."""
        built: list[BaseTool] = []
        gated: Gated = {}
        failures: dict[str, str] = {}
        refs: list[tuple[ToolRef | McpRef, list[BaseTool]]] = []
        for ref in spec.tools:
            entry = self.tools.get(ref.name)
            if entry is not None:  # else check_spec rejected this already
                refs.append((ref, entry.create(ref.settings)))
        refs.extend((mcp_ref, self._mcp(spec, mcp_ref)) for mcp_ref in spec.mcp)
        for tool_ref, created in refs:
            built.extend(created)
            if tool_ref.requires_approval:
                own = (tool_ref.approval_timeout_s, tool_ref.approval_on_timeout)
                gated.update((tool.name, own) for tool in created)
            failures.update((tool.name, tool_ref.on_failure) for tool in created)
        built.extend(AgentTool(self.build(child)) for child in spec.agent_tools)
        if spec.memory is not None and spec.memory.tools:
            built.extend(memory_tools())
        _check_unique_names(spec, built)
        return built, gated, failures

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


def _approval_policy(spec: AgentSpec, gated: Gated) -> ApprovalPolicy:
    """The approval settings: the tools flagged ``requires_approval`` (each an ``ask``
    rule, with its own time-out if it has one) and how long a person may take, for them
    and for the spec's ``ask`` rules."""
    per_tool = {name: own for name, own in gated.items() if own != (None, None)}
    if spec.approval is None:
        return ApprovalPolicy(tools=frozenset(gated), per_tool=per_tool)
    return ApprovalPolicy(
        tools=frozenset(gated),
        timeout_s=spec.approval.timeout_s,
        on_timeout=spec.approval.on_timeout,
        per_tool=per_tool,
    )
