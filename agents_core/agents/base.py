"""``BaseAgent``: the template every agent runs through."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing
from typing import final

from agents_core.context import Context
from agents_core.events import Event, EventType
from agents_core.exceptions import ConfigurationError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


class BaseAgent(ABC):
    """An agent: a name, an optional description, optional sub-agents.

    ``astream`` is final: it derives the agent's context (stamping its name as the
    author of its events, and the branch it runs on), emits ``agent_start``, relays
    what ``_astream`` yields, and emits ``agent_end`` when the agent finishes normally.
    Errors propagate to the runner, which turns them into an error event that closes
    the invocation.
    """

    def __init__(
        self, name: str, *, description: str = "", sub_agents: Sequence[BaseAgent] = ()
    ) -> None:
        if not _NAME.match(name) or name == "user":
            raise ConfigurationError(
                f"invalid agent name {name!r}: use letters, digits, '_' or '-' "
                "(no dots, at most 64 characters, not 'user')"
            )
        self.name = name
        self.description = description
        self.parent_agent: BaseAgent | None = None
        self.sub_agents: list[BaseAgent] = list(sub_agents)
        seen: set[str] = set()
        for child in self.sub_agents:
            if child.name in seen:
                raise ConfigurationError(f"agent {name!r} has two sub-agents named {child.name!r}")
            if child.parent_agent is not None:
                raise ConfigurationError(f"agent {child.name!r} already has a parent agent")
            seen.add(child.name)
            child.parent_agent = self

    @final
    async def astream(self, ctx: Context) -> AsyncGenerator[Event]:
        """Run this agent in ``ctx`` (its parent's context), yielding its events.

        Agents take their parent's branch; workflow agents that isolate their children
        (parallel, loop, agent tools) pass a context made with ``ctx.for_branch``.
        """
        ctx = ctx.for_agent(self.name)
        yield ctx.event(EventType.AGENT_START)
        async with aclosing(self._astream(ctx)) as events:
            async for event in events:
                yield event
        yield ctx.event(EventType.AGENT_END)

    @abstractmethod
    def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        """The agent's own behaviour, in its own context."""

    @property
    def root_agent(self) -> BaseAgent:
        agent = self
        while agent.parent_agent is not None:
            agent = agent.parent_agent
        return agent

    def walk(self) -> Iterator[BaseAgent]:
        """This agent and every descendant, depth first."""
        yield self
        for child in self.sub_agents:
            yield from child.walk()

    def find_agent(self, name: str) -> BaseAgent | None:
        return next((a for a in self.walk() if a.name == name), None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"
