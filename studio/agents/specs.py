"""Agent specs inside Studio: validated against what their owner has, and built.

A spec names models by their ``ModelConfig`` name, tools and hooks by their registered
names (``studio.agents.tools.tool_registry``, ``studio.agents.hooks.hook_registry``),
MCP servers by their ``McpServer`` name and other agents by their ``Agent`` name, all
the owner's own: a spec can never reach another user's models, servers or agents.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agents_core import builder as core_builder
from agents_core import config as core_config
from agents_core import exceptions as core_exceptions
from agents_core import specs as core_specs
from agents_core.agents.base import BaseAgent
from agents_core.compaction import CompactionConfig
from agents_core.llm import BaseLlm
from agents_core.memory import KeyFacts
from agents_core.tools.base import BaseTool
from studio import session_cache
from studio.agents.hooks import hook_registry
from studio.agents.llms import build_llm, in_words, option_problems
from studio.agents.tools import tool_registry
from studio.agents.versions import StoredSpecs, VersionModels, model_configs, version_models
from studio.costs import Price
from studio.errors import InvalidInputError, Path, Problem
from studio.models import Agent, AgentVersion, McpServer, ModelConfig
from studio.prompts import OwnerTemplates
from studio.prompts import pin as pin_templates
from studio.skills import OwnerSkills
from studio.skills import pin as pin_skills

_UNION_TAGS = {"AgentSpec", "AgentRef"}


def json_schema() -> dict[str, Any]:
    return core_specs.AgentSpec.json_schema()


def normalize(spec: core_specs.AgentSpec) -> dict[str, Any]:
    """The stored form: the spec's JSON without default values, so it reads like what
    was written and hashes the same whatever defaults it spelled out."""
    return spec.model_dump(mode="json", exclude_defaults=True)


def parse(data: Any) -> core_specs.AgentSpec:
    """The spec's structure; ``InvalidInputError`` with a path for each problem."""
    try:
        return core_specs.AgentSpec.model_validate(data)
    except ValidationError as exc:
        problems = [
            Problem(_clean_loc(tuple(error["loc"])), error["type"], _message(error))
            for error in exc.errors()
            if _on_taken_branch(data, tuple(error["loc"]))
        ]
        raise InvalidInputError("spec", problems) from None


def validate(
    owner: AbstractBaseUser, data: Any, *, agent_name: str | None = None
) -> core_specs.AgentSpec:
    """Parse ``data`` and check it can be built from ``owner``'s models, the registered
    tools, ``owner``'s agents (the spec standing in for ``agent_name``'s own) and
    templates and skills; the spec comes back with its templates and skills pinned to their
    latest version."""
    templates, skills = OwnerTemplates(owner.pk), OwnerSkills(owner.pk)
    spec = pin_skills(pin_templates(parse(data), templates), skills)
    agents = StoredSpecs(owner.pk, {agent_name: spec} if agent_name is not None else None)
    problems = core_builder.check_spec(
        spec,
        models=set(model_configs(owner.pk)),
        tools=tool_registry(owner.pk),
        agents=agents,
        mcp_servers=mcp_server_names(owner),
        hooks=hook_registry(),
        templates=templates,
        skills=skills,
    )
    if problems:
        raise InvalidInputError("spec", [Problem(p.path, p.code, p.message) for p in problems])
    return spec


@dataclass(frozen=True, slots=True)
class Built:
    """A stored version, ready to run: its agent tree, run limits and compaction."""

    agent: BaseAgent
    run_config: core_config.RunConfig
    compaction: CompactionConfig | None
    key_facts: KeyFacts | None = None
    """Who saves each turn's key facts to memory (``MemorySpec.save_at_end``)."""


def build(
    version: AgentVersion,
    *,
    mcp_tools: Mapping[str, Sequence[BaseTool]] | None = None,
    models: VersionModels | None = None,
) -> Built:
    """The agent tree of a stored version, its run limits and how its sessions are
    compacted; ``SpecError`` if the owner's models, MCP servers or referenced agents
    changed so that it no longer builds. ``mcp_tools`` are the connected tools of the
    servers it names (``studio.mcp.client.open_tools``); ``models`` what
    ``version_models`` read of it, when already read."""
    owner_id = version.agent.owner_id
    read = version_models(version) if models is None else models
    spec, agents, llms = read.spec, read.agents, _LazyModels(read.configs)
    agent = core_builder.build_agent(
        spec,
        models=llms,
        tools=tool_registry(owner_id),
        agents=agents,
        mcp_tools=mcp_tools,
        hooks=hook_registry(),
        templates=OwnerTemplates(owner_id),
        skills=OwnerSkills(owner_id),
        histories=session_cache.HISTORIES,
    )
    compaction = core_builder.build_compaction(spec, models=llms, agents=agents)
    key_facts = core_builder.build_key_facts(spec, models=llms)
    return Built(agent, spec.run_config(), compaction, key_facts)


def root_agent_name(version: AgentVersion | None) -> str:
    """The name of the agent a version's runs run (``studio`` once it was deleted)."""
    if version is None:
        return "studio"
    return str(version.spec.get("name") or version.agent.name)


def agent_models(version: AgentVersion) -> dict[str, str]:
    """The model each agent of ``version``'s tree calls, by agent name (``VersionModels``)."""
    return version_models(version).agent_models


def agent_prices(version: AgentVersion) -> dict[str, Price]:
    """The price of each agent's model calls, by agent name (``VersionModels``)."""
    return version_models(version).agent_prices


def agent_model_configs(version: AgentVersion) -> dict[str, ModelConfig]:
    """The model config each agent of ``version``'s tree calls (``VersionModels``)."""
    return version_models(version).by_agent


def mcp_server_names(owner: AbstractBaseUser) -> set[str]:
    return set(McpServer.objects.filter(owner_id=owner.pk).values_list("name", flat=True))


def agents_using_mcp_server(owner: AbstractBaseUser, server_name: str) -> list[str]:
    """Names of ``owner``'s agents whose current spec names the MCP server anywhere
    (their own tree; a reference is the referenced agent's use)."""
    return sorted(
        name
        for name, spec in owner_agent_specs(owner).items()
        if server_name in core_builder.mcp_server_names(spec)
    )


def agents_using_remote_agent(owner: AbstractBaseUser, remote_name: str) -> list[str]:
    """Names of ``owner``'s agents whose current spec lists the remote A2A agent in an
    ``a2a`` tool's settings anywhere in its tree."""
    return sorted(
        name
        for name, spec in owner_agent_specs(owner).items()
        if remote_name in remote_agent_names(spec)
    )


def remote_agent_names(spec: core_specs.AgentSpec) -> set[str]:
    """The remote agents the ``a2a`` tools of the spec's tree list."""
    found: set[str] = set()
    for node in spec.agents():
        for tool in node.tools:
            servers = tool.settings.get("servers") if tool.name == "a2a" else None
            if isinstance(servers, list):
                found.update(name for name in servers if isinstance(name, str))
    return found


def owner_agent_specs(owner: AbstractBaseUser) -> dict[str, core_specs.AgentSpec]:
    """``owner``'s agents by name, each with its current spec: what ``{"ref": name}`` means."""
    rows = Agent.objects.filter(owner_id=owner.pk, current_version__isnull=False).values_list(
        "name", "current_version__spec"
    )
    return {name: core_specs.AgentSpec.model_validate(spec) for name, spec in rows}


def agents_using_model(owner: AbstractBaseUser, model_name: str) -> list[str]:
    """Names of ``owner``'s agents whose current spec names ``model_name`` anywhere."""
    return sorted(
        name for name, spec in owner_agent_specs(owner).items() if model_name in _model_names(spec)
    )


def agents_referencing(owner: AbstractBaseUser, agent_name: str) -> list[str]:
    """Names of ``owner``'s other agents whose current spec has ``{"ref": agent_name}``."""
    return sorted(
        name
        for name, spec in owner_agent_specs(owner).items()
        if name != agent_name and agent_name in _refs(spec)
    )


def _refs(spec: core_specs.AgentSpec) -> set[str]:
    return {
        child.ref
        for agent in spec.agents()
        for child in agent.sub_agents
        if isinstance(child, core_specs.AgentRef)
    }


def _model_names(spec: core_specs.AgentSpec) -> set[str]:
    agents = spec.agents()
    return {name for agent in agents for name in (agent.model, *agent.fallback_models) if name}


class _LazyModels(Mapping[str, BaseLlm]):
    """Builds (and decrypts the key of) only the models a tree actually uses."""

    def __init__(self, configs: dict[str, ModelConfig]) -> None:
        self._configs = configs
        self._built: dict[str, BaseLlm] = {}

    def __getitem__(self, name: str) -> BaseLlm:
        if name not in self._built:
            config = self._configs[name]
            try:
                self._built[name] = build_llm(config)
            except ValidationError as exc:
                problems = option_problems(config.provider, config.options) or [
                    Problem(tuple(e["loc"]), e["type"], e["msg"]) for e in exc.errors()
                ]
                raise core_exceptions.ConfigurationError(
                    f"model {name!r} has invalid options: {in_words(problems)}"
                ) from None
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._configs)

    def __len__(self) -> int:
        return len(self._configs)


def _on_taken_branch(data: Any, loc: Path) -> bool:
    """Whether an error of the ``AgentSpec | AgentRef`` union belongs to the branch the
    input meant (a ``ref`` key means a reference), so the other branch's noise is dropped."""
    node = data
    for part in loc:
        if part in _UNION_TAGS:
            means_ref = isinstance(node, dict) and "ref" in node
            return (part == "AgentRef") == means_ref
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return True
    return True


def _message(error: ErrorDetails) -> str:
    """Pydantic's message, except that a pattern is said in words, never as a regex, and
    a rule of the spec's own says only its words (no "Value error, " before them)."""
    if error["type"] == "string_pattern_mismatch":
        return core_specs.pattern_rule(str(error.get("ctx", {}).get("pattern", "")))
    if error["type"] == "value_error":
        return error["msg"].removeprefix("Value error, ")
    return error["msg"]


def _clean_loc(loc: Path) -> Path:
    return tuple(part for part in loc if part not in _UNION_TAGS)
