"""``BaseAgent``: the template every agent runs through."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing
from typing import final

from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType
from agents_core.exceptions import (
    AgentsCoreError,
    ConfigurationError,
    FailedByPolicyError,
    LimitExceededError,
    failed_call,
)
from agents_core.failures import FailurePolicy

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


class BaseAgent(ABC):
    """An agent: a name, an optional description, optional sub-agents.

    ``astream`` is final: it derives the agent's context (stamping its name as the
    author of its events, and the branch it runs on), emits ``agent_start``, relays
    what ``_astream`` yields, and emits ``agent_end`` when the agent finishes normally.
    Errors propagate to the runner, which turns them into an error event that closes
    the invocation, unless ``on_failure`` (``agents_core.failures``) says to go on: then
    the agent ends with a non-fatal ``error`` event (and its ``agent_end``), and its
    parent goes on.
    """

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        sub_agents: Sequence[BaseAgent] = (),
        on_failure: FailurePolicy | str | None = None,
    ) -> None:
        if not _NAME.match(name) or name == "user":
            raise ConfigurationError(
                f"invalid agent name {name!r}: use letters, digits, '_' or '-' "
                "(no dots, at most 64 characters, not 'user')"
            )
        self.name = name
        self.description = description
        self.on_failure = None if on_failure is None else FailurePolicy(on_failure)
        """What this agent's failure does; ``None``: whatever its place decides."""
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
        resume = ctx.invocation.resume
        if resume is not None and (running := resume.reopen(self.name, ctx.branch)):
            ctx = ctx.within(running)  # it parked: it goes on in its own span
        span, parent = ctx.span_id, ctx.parent_span_id
        start = ctx.built_event(EventType.AGENT_START, span_id=span, parent_span_id=parent)
        yield start
        try:
            async with aclosing(self._astream(ctx)) as events:
                async for event in events:
                    yield event
        except AgentsCoreError as exc:
            yield self._absorb(ctx, exc)
        yield ctx.built_event(
            EventType.AGENT_END, span_id=span, parent_span_id=parent, started_at=start.created_at
        )

    def _absorb(self, ctx: Context, exc: AgentsCoreError) -> Event:
        """The error event of a failure ``on_failure`` lets the run go past; raises the
        failure (as ``FailedByPolicyError`` with ``fail``) otherwise. Limits and an
        inner ``fail`` always end the run."""
        policy = self.on_failure
        if policy is None or isinstance(exc, LimitExceededError | FailedByPolicyError):
            raise exc
        message = f"agent {self.name!r} failed: {exc.message}"
        if policy is FailurePolicy.FAIL:
            raise FailedByPolicyError(message, code=exc.code) from exc
        degraded = policy is FailurePolicy.DEGRADE
        attempts, call = failed_call(exc)  # its model call that failed, if that was the failure
        error = ErrorInfo(
            code=exc.code,
            message=message,
            failure="non_fatal",
            degraded=degraded,
            attempts=attempts,
        )
        return ctx.event(EventType.ERROR, error=error, **call)

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
