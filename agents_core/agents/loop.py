"""``LoopAgent``: repeats its children until one escalates or the iterations run out."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from dataclasses import dataclass

from agents_core.agents.base import BaseAgent
from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType, new_id, utc_now
from agents_core.exceptions import ConfigurationError
from agents_core.failures import FailurePolicy
from agents_core.pausing import pause_point


class LoopAgent(BaseAgent):
    """Runs ``sub_agents`` in order, ``max_iterations`` times at most.

    Iteration ``i`` runs on branch ``<branch>.<name>@<i>``, so each pass starts with a
    clean history; pass results forward through state (``output_key`` and ``{key}``
    instructions). The loop stops at the first event with ``actions.escalate`` (the
    ``exit_loop`` tool sets it), and emits ``agent_end`` for the agents it stopped, so a
    timeline never shows them open. Running out of iterations emits a non-fatal error
    event, and the invocation goes on.
    """

    def __init__(
        self,
        name: str,
        *,
        sub_agents: Sequence[BaseAgent],
        max_iterations: int = 5,
        description: str = "",
        on_failure: FailurePolicy | str | None = None,
    ) -> None:
        if not sub_agents:
            raise ConfigurationError(f"loop agent {name!r} needs at least one sub-agent")
        if max_iterations < 1:
            raise ConfigurationError(f"loop agent {name!r}: max_iterations must be at least 1")
        super().__init__(
            name, description=description, sub_agents=sub_agents, on_failure=on_failure
        )
        self.max_iterations = max_iterations

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        for iteration in range(1, self.max_iterations + 1):
            stopped = _Stop()
            async with aclosing(self._pass(ctx, iteration, stopped)) as events:
                async for event in events:
                    yield event
            if stopped.early or ctx.end_invocation:
                return
        yield ctx.event(
            EventType.ERROR,
            error=ErrorInfo(
                code="loop_limit_reached",
                message=f"loop {self.name!r} stopped after {self.max_iterations} iterations "
                "without exit_loop",
                failure="non_fatal",
                limit="max_iterations",
            ),
        )

    async def _pass(self, ctx: Context, iteration: int, stopped: _Stop) -> AsyncGenerator[Event]:
        """Iteration ``iteration``: each child in turn on the pass's branch, skipping
        those that finished it before the turn was interrupted (``agents_core.resume``)."""
        pass_ctx = ctx.for_branch(f"{self.name}@{iteration}")
        resume = ctx.invocation.resume
        for index, child in enumerate(self.sub_agents):
            if resume is not None and resume.skips(child.name, pass_ctx.branch):
                continue
            if index or iteration > 1:  # a paused run waits between children
                async for held in pause_point(pass_ctx):
                    yield held
            opened: list[Event] = []  # agent_start events not yet closed
            async with aclosing(child.astream(pass_ctx)) as events:
                async for event in events:
                    yield event
                    _track(opened, event)
                    if event.actions.escalate:
                        break  # closing the stream stops whatever the child does next
                else:
                    opened.clear()
            if opened:  # stopped early: close what was open, innermost first
                for start in reversed(opened):
                    yield start.model_copy(
                        update={
                            "id": new_id(),
                            "type": EventType.AGENT_END,
                            "created_at": utc_now(),
                        }
                    )
                stopped.early = True
                return
            if ctx.end_invocation:
                return


@dataclass(slots=True)
class _Stop:
    """Whether a pass ended the loop early (an escalation)."""

    early: bool = False


def _track(opened: list[Event], event: Event) -> None:
    if event.type is EventType.AGENT_START:
        opened.append(event)
    elif event.type is EventType.AGENT_END:
        for index in range(len(opened) - 1, -1, -1):
            if (opened[index].author, opened[index].branch) == (event.author, event.branch):
                del opened[index]
                break
