"""Agents as data: ``AgentSpec`` describes a whole agent tree as JSON.

A spec names its model and tools; ``agents_core.builder`` resolves those names through
registries, so whoever writes a spec (a browser, say) can only pick what the server
registered and never sends code.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Annotated, Any, Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from agents_core.config import RunConfig
from agents_core.contracts import Contract
from agents_core.policies import MAX_RULES, RULE_NAME_PATTERN, RULE_NAME_RULE, PolicyRule

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
# The rules write ranges with an en dash, as prose does (hence the RUF001 exemptions).
NAME_RULE = "Use 1–64 letters, digits, _ or -, starting with a letter or _."  # noqa: RUF001
STATE_KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
STATE_KEY_RULE = "Use 1–64 letters, digits or _, starting with a letter or _."  # noqa: RUF001
PREFIX_PATTERN = r"^[A-Za-z0-9_-]{0,32}$"
PREFIX_RULE = "Use at most 32 letters, digits, _ or -."
SKILL_NAME_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
SKILL_NAME_RULE = (
    "Use 1–64 lowercase letters, digits and hyphens, a hyphen only between two of the others."  # noqa: RUF001
)
PATTERN_RULES: Mapping[str, str] = MappingProxyType(
    {
        NAME_PATTERN: NAME_RULE,
        STATE_KEY_PATTERN: STATE_KEY_RULE,
        PREFIX_PATTERN: PREFIX_RULE,
        RULE_NAME_PATTERN: RULE_NAME_RULE,
        SKILL_NAME_PATTERN: SKILL_NAME_RULE,
    }
)
"""What each pattern of a spec admits, in words: error messages say these, never a regex."""
MAX_INSTRUCTION_CHARS = 50_000
MAX_OUTPUT_SCHEMA_CHARS = 20_000
MAX_OUTPUT_SCHEMA_DEPTH = 32
MAX_OUTPUT_RETRIES = 5

AgentType = Literal["llm", "react", "sequential", "parallel", "loop"]
MODEL_TYPES: frozenset[str] = frozenset({"llm", "react"})
OnFailure = Literal["fail", "continue", "degrade"]
"""A failure policy (``agents_core.failures``)."""


class ToolRef(Contract):
    """A registered tool (or toolset) by name, with its settings."""

    name: str = Field(min_length=1, max_length=64)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Validated against the registry entry's settings model when the spec is built."""
    requires_approval: bool = False
    """Every call waits for a person to approve, edit or deny it."""
    approval_timeout_s: PositiveFloat | None = None
    """With ``requires_approval``: how long a call waits (else the agent's ``approval``)."""
    approval_on_timeout: Literal["deny", "approve"] | None = None
    """With ``requires_approval``: what decides a call nobody decided in time."""
    on_failure: OnFailure = "continue"
    """What a failed call does: the model reads the error (``continue``), and the run
    ends ``degraded`` (``degrade``) or fails at once (``fail``)."""


class McpRef(Contract):
    """The tools of an MCP server, by the name the builder's caller registered it under.

    The server is connected once per run; its tools are offered under their own names,
    or ``prefix`` + name when two servers (or a server and a registered tool) would
    otherwise offer the same name.
    """

    server: str = Field(pattern=NAME_PATTERN)
    tools: list[Annotated[str, Field(min_length=1, max_length=128)]] | None = Field(
        default=None, max_length=128
    )
    """Server tool names to offer; ``None`` offers every tool the server lists."""
    prefix: str = Field(default="", pattern=PREFIX_PATTERN)
    requires_approval: bool = False
    """Every call of these tools waits for a person to approve, edit or deny it."""
    approval_timeout_s: PositiveFloat | None = None
    """As ``ToolRef.approval_timeout_s``."""
    approval_on_timeout: Literal["deny", "approve"] | None = None
    on_failure: OnFailure = "continue"
    """What a failed call of these tools does (as ``ToolRef.on_failure``)."""


class HookRef(Contract):
    """A registered hook by name, with its settings; an agent's hooks run in order."""

    name: str = Field(min_length=1, max_length=64)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Validated against the registry entry's settings model when the spec is checked."""


class TemplateRef(Contract):
    """A prompt template by name (``agents_core.prompts``), at a version; with no
    version, whoever stores the spec pins the latest one."""

    name: str = Field(pattern=NAME_PATTERN)
    version: PositiveInt | None = None


MAX_SKILLS = 20


class SkillRef(Contract):
    """A skill by name (``agents_core.skills``), at a version; with no version,
    whoever stores the spec pins the latest one."""

    name: str = Field(pattern=SKILL_NAME_PATTERN, max_length=64)
    version: PositiveInt | None = None


class PlannerSpec(Contract):
    type: Literal["plan_react", "task"]


class LimitsSpec(Contract):
    """Run-wide fail-safe limits (root agent only); unset fields keep the defaults."""

    max_steps: PositiveInt | None = None
    max_model_calls: PositiveInt | None = None
    max_tool_calls: PositiveInt | None = None
    max_wall_time_s: PositiveFloat | None = None
    max_tokens: PositiveInt | None = None
    max_transfers: PositiveInt | None = None

    def apply(self, config: RunConfig) -> RunConfig:
        return config.model_copy(update=self.model_dump(exclude_none=True))


BudgetCost = Annotated[Decimal, Field(gt=0, max_digits=16, decimal_places=6)]
"""An amount in the price currency of the agent's models (USD unless a model config
says otherwise), up to 9,999,999,999.999999; sent as a string or a number."""


class BudgetSpec(Contract):
    """What one agent version may spend (root agent only): per run, and per UTC day
    across all its runs, in cost and in tokens; unset fields are unlimited. A model
    call is refused before it is made when its worst case (its prompt's estimated
    tokens plus the most its model may answer) could pass one of them."""

    run_cost: BudgetCost | None = None
    day_cost: BudgetCost | None = None
    run_tokens: PositiveInt | None = None
    day_tokens: PositiveInt | None = None


class ApprovalSpec(Contract):
    """How long an approval may wait, and what happens when nobody answers."""

    timeout_s: PositiveFloat = 300.0
    on_timeout: Literal["deny", "approve"] = "deny"


class CompactionSpec(Contract):
    """When a long session's older events are summarised into one compaction event, so
    the model's context stays bounded (root agent only; on unless ``enabled`` is false).

    Once more than ``threshold`` conversation events are visible, all but the newest
    ``keep_last`` are summarised by ``model`` (default: the first model the agent tree
    names), at the end of a turn."""

    enabled: bool = True
    threshold: PositiveInt = Field(default=60, le=10_000)
    keep_last: PositiveInt = Field(default=20, le=10_000)
    model: str | None = Field(default=None, min_length=1, max_length=128)

    @model_validator(mode="after")
    def _keeps_fewer_than_it_allows(self) -> CompactionSpec:
        if self.keep_last >= self.threshold:
            raise ValueError("keep_last must be smaller than threshold")
        return self


MAX_FALLBACK_MODELS = 4
MAX_CACHE_TTL_S = 30 * 24 * 3600


class CacheSpec(Contract):
    """Answers of this agent's model calls are kept for ``ttl_s`` seconds and a call
    with the very same request (model, messages, tools) gets the kept answer, at no
    cost, instead of calling the model. Off unless an agent sets it."""

    ttl_s: PositiveInt = Field(default=3600, le=MAX_CACHE_TTL_S)


class MemorySpec(Contract):
    """``llm`` and ``react`` agents: long-term memory of their user (``agents_core.memory``).

    ``tools`` offers the agent ``remember``, ``recall`` and ``forget_memory``;
    ``save_at_end`` (root agent only) ends each turn by storing the conversation's key
    facts, written by the agent's model, as its memories."""

    tools: bool = True
    save_at_end: bool = False


class AgentRef(Contract):
    """Another stored agent, by name, used as a sub-agent."""

    ref: str = Field(pattern=NAME_PATTERN)


class AgentSpec(Contract):
    """One agent and, through ``sub_agents`` and ``agent_tools``, its whole tree.

    Type rules (checked by ``agents_core.builder.check_spec``): ``llm`` and ``react``
    agents need a ``model``; ``sequential``, ``parallel`` and ``loop`` agents need
    sub-agents and take no model, tools, MCP servers, instruction, planner, hooks,
    policies or output schema; ``output_schema`` is for ``llm`` agents, with an ``output_key``;
    ``max_iterations`` is model calls per turn for ``llm``/``react`` and passes for
    ``loop``; ``limits`` is for the root only; agent names are unique in the tree.
    """

    type: AgentType = "llm"
    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(default="", max_length=2_000)
    instruction: str = Field(default="", max_length=MAX_INSTRUCTION_CHARS)
    instruction_template: TemplateRef | None = None
    """``llm`` and ``react`` agents: the instruction, rendered from a prompt template
    with the session state before each model call (instead of ``instruction``)."""
    model: str | None = Field(default=None, min_length=1, max_length=128)
    """The name of a model in the builder's model registry."""
    fallback_models: list[Annotated[str, Field(min_length=1, max_length=128)]] = Field(
        default_factory=list, max_length=MAX_FALLBACK_MODELS
    )
    """``llm`` and ``react`` agents: models tried in order, after ``model``, when a call
    fails with a retryable failure (retries spent) or its provider's breaker is open."""
    cache: CacheSpec | None = None
    """``llm`` and ``react`` agents: keep model answers and reuse them for the same
    request (``CacheSpec``); ``None``: no cache."""
    tools: list[ToolRef] = Field(default_factory=list, max_length=64)
    mcp: list[McpRef] = Field(default_factory=list, max_length=16)
    """MCP servers whose tools this agent may call."""
    agent_tools: list[AgentSpec] = Field(default_factory=list, max_length=32)
    """Agents this one calls like tools; each returns its final answer."""
    sub_agents: list[AgentSpec | AgentRef] = Field(default_factory=list, max_length=32)
    """Workflow children, or for ``llm`` agents the agents it may transfer to."""
    planner: PlannerSpec | None = None
    output_key: str | None = Field(default=None, pattern=STATE_KEY_PATTERN)
    output_schema: dict[str, Any] | None = None
    """``llm`` agents: a JSON Schema the final answer must match (``output_key`` stores
    the parsed value); checked as a schema by ``check_spec``."""
    output_retries: int = Field(default=2, ge=0, le=MAX_OUTPUT_RETRIES)
    """Corrective re-prompts for an answer that does not match ``output_schema``."""
    hooks: list[HookRef] = Field(default_factory=list, max_length=16)
    """Registered hooks around this agent's model and tool calls, in order."""
    policies: list[PolicyRule] = Field(default_factory=list, max_length=MAX_RULES)
    """``llm`` and ``react`` agents: rules that allow, deny, rewrite or send for approval
    this agent's model, tool and sub-agent calls (``agents_core.policies``)."""
    on_failure: OnFailure | None = None
    """What this agent's failure does (``agents_core.failures``); unset: its place
    decides (the run fails, except as an agent tool or a parallel branch)."""
    max_iterations: PositiveInt | None = Field(default=None, le=1_000)
    limits: LimitsSpec | None = None
    budget: BudgetSpec | None = None
    """Root only: what the version may spend (``BudgetSpec``); enforced by whoever runs
    it, through a spend guard (``agents_core.spend``)."""
    approval: ApprovalSpec | None = None
    memory: MemorySpec | None = None
    """``llm`` and ``react`` agents: their user's long-term memory (``MemorySpec``)."""
    skills: list[SkillRef] = Field(default_factory=list, max_length=MAX_SKILLS)
    """``llm`` and ``react`` agents: skills they may load (``agents_core.skills``)."""
    compaction: CompactionSpec | None = None
    """Root only; unset means the defaults (on)."""

    @field_validator("output_schema", mode="before")
    @classmethod
    def _schema_from_text(cls, value: object) -> object:
        """A schema may come as its JSON text (a form's text box): parsed, or refused
        saying why it does not parse."""
        if not isinstance(value, str):
            return value
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except ValueError as exc:
            raise ValueError(f"the output schema is not valid JSON: {exc}") from None

    @field_validator("output_schema")
    @classmethod
    def _schema_is_bounded(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        """Checking and applying a schema recurses through it: bound its depth first."""
        if schema is None:
            return None
        if _depth(schema) > MAX_OUTPUT_SCHEMA_DEPTH:
            raise ValueError(f"an output schema may nest at most {MAX_OUTPUT_SCHEMA_DEPTH} levels")
        if len(json.dumps(schema)) > MAX_OUTPUT_SCHEMA_CHARS:
            raise ValueError(
                f"an output schema may be at most {MAX_OUTPUT_SCHEMA_CHARS} characters"
            )
        return schema

    def agents(self) -> Iterator[AgentSpec]:
        """This agent and every agent spec in its tree (agent tools, sub-agents), each
        before its children; a reference (``AgentRef``) is not followed."""
        pending: list[AgentSpec] = [self]
        while pending:
            node = pending.pop()
            yield node
            children = [*node.agent_tools, *node.sub_agents]
            pending.extend(c for c in reversed(children) if isinstance(c, AgentSpec))

    def with_each_agent(self, update: Callable[[AgentSpec], dict[str, Any]]) -> AgentSpec:
        """This spec with ``update(agent)``'s field values set on every agent of its
        tree; what nothing changes in is not copied."""
        changes = update(self)
        for field in ("agent_tools", "sub_agents"):
            children: list[AgentSpec | AgentRef] = getattr(self, field)
            changed = [
                c.with_each_agent(update) if isinstance(c, AgentSpec) else c for c in children
            ]
            if any(new is not old for new, old in zip(changed, children, strict=True)):
                changes[field] = changed
        return self.model_copy(update=changes) if changes else self

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """``base`` (or the defaults) with this spec's limits applied."""
        config = base or RunConfig()
        return self.limits.apply(config) if self.limits else config

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema a builder page validates against."""
        return cls.model_json_schema()


def stored_agents(spec: object) -> Iterator[dict[str, Any]]:
    """Every agent of a spec as stored (JSON, of any version, unvalidated): the root and
    those under its ``agent_tools`` and ``sub_agents``, each before its children; what
    is not an object is skipped, and a reference (``{"ref": name}``) is not followed."""
    pending = [spec]
    while pending:
        node = pending.pop()
        if isinstance(node, dict) and "ref" not in node:
            yield node
            for key in ("sub_agents", "agent_tools"):
                children = node.get(key)
                pending.extend(reversed(children) if isinstance(children, list) else ())


def _depth(value: object) -> int:
    """How deeply ``value`` nests objects and arrays, found without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = (
            node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        )
        if children:
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in children)
    return deepest


def pattern_rule(pattern: str) -> str:
    """What ``pattern`` (one of a spec's) admits, in words, for an error message."""
    return PATTERN_RULES.get(pattern, "Use only the characters and length this field allows.")
