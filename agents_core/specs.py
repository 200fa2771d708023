"""Agents as data: ``AgentSpec`` describes a whole agent tree as JSON.

A spec names its model and tools; ``agents_core.builder`` resolves those names through
registries, so whoever writes a spec (a browser, say) can only pick what the server
registered and never sends code.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PositiveFloat, PositiveInt

from agents_core.config import RunConfig
from agents_core.contracts import Contract

NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
MAX_INSTRUCTION_CHARS = 50_000

AgentType = Literal["llm", "react", "sequential", "parallel", "loop"]
MODEL_TYPES: frozenset[str] = frozenset({"llm", "react"})


class ToolRef(Contract):
    """A registered tool (or toolset) by name, with its settings."""

    name: str = Field(min_length=1, max_length=64)
    settings: dict[str, Any] = Field(default_factory=dict)
    """Validated against the registry entry's settings model when the spec is built."""
    requires_approval: bool = False
    """Every call waits for a person to approve, edit or deny it."""


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
    prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_-]{0,32}$")
    requires_approval: bool = False
    """Every call of these tools waits for a person to approve, edit or deny it."""


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


class ApprovalSpec(Contract):
    """How long an approval may wait, and what happens when nobody answers."""

    timeout_s: PositiveFloat = 300.0
    on_timeout: Literal["deny", "approve"] = "deny"


class AgentRef(Contract):
    """Another stored agent, by name, used as a sub-agent."""

    ref: str = Field(pattern=NAME_PATTERN)


class AgentSpec(Contract):
    """One agent and, through ``sub_agents`` and ``agent_tools``, its whole tree.

    Type rules (checked by ``agents_core.builder.check_spec``): ``llm`` and ``react``
    agents need a ``model``; ``sequential``, ``parallel`` and ``loop`` agents need
    sub-agents and take no model, tools, MCP servers, instruction or planner; ``max_iterations`` is
    model calls per turn for ``llm``/``react`` and passes for ``loop``; ``limits`` is
    for the root only; agent names are unique in the tree.
    """

    type: AgentType = "llm"
    name: str = Field(pattern=NAME_PATTERN)
    description: str = Field(default="", max_length=2_000)
    instruction: str = Field(default="", max_length=MAX_INSTRUCTION_CHARS)
    model: str | None = Field(default=None, min_length=1, max_length=128)
    """The name of a model in the builder's model registry."""
    tools: list[ToolRef] = Field(default_factory=list, max_length=64)
    mcp: list[McpRef] = Field(default_factory=list, max_length=16)
    """MCP servers whose tools this agent may call."""
    agent_tools: list[AgentSpec] = Field(default_factory=list, max_length=32)
    """Agents this one calls like tools; each returns its final answer."""
    sub_agents: list[AgentSpec | AgentRef] = Field(default_factory=list, max_length=32)
    """Workflow children, or for ``llm`` agents the agents it may transfer to."""
    planner: PlannerSpec | None = None
    output_key: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
    max_iterations: PositiveInt | None = Field(default=None, le=1_000)
    limits: LimitsSpec | None = None
    approval: ApprovalSpec | None = None

    def run_config(self, base: RunConfig | None = None) -> RunConfig:
        """``base`` (or the defaults) with this spec's limits applied."""
        config = base or RunConfig()
        return self.limits.apply(config) if self.limits else config

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema a builder page validates against."""
        return cls.model_json_schema()
