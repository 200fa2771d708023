"""``ParallelAgent``: children at the same time, each on its own branch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing

from agents_core.agents.base import BaseAgent
from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType
from agents_core.exceptions import AgentsCoreError, ConfigurationError, LimitExceededError

_DONE = object()


class ParallelAgent(BaseAgent):
    """Runs ``sub_agents`` concurrently; their events are merged live, in arrival order.

    Each child runs on branch ``<branch>.<child name>`` and does not see its siblings.
    A child that fails ends as a non-fatal ``error`` event on its branch while the
    others finish; reaching a run limit still ends the whole invocation.
    """

    def __init__(
        self, name: str, *, sub_agents: Sequence[BaseAgent], description: str = ""
    ) -> None:
        if not sub_agents:
            raise ConfigurationError(f"parallel agent {name!r} needs at least one sub-agent")
        super().__init__(name, description=description, sub_agents=sub_agents)

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        merged: asyncio.Queue[Event | object] = asyncio.Queue(maxsize=len(self.sub_agents))

        async def run(child: BaseAgent) -> None:
            branch_ctx = ctx.for_branch(child.name)
            try:
                async with aclosing(child.astream(branch_ctx)) as events:
                    async for event in events:
                        await merged.put(event)
            except LimitExceededError:
                raise
            except Exception as exc:
                await merged.put(_branch_error(branch_ctx, child, exc))
            finally:
                await merged.put(_DONE)

        async with asyncio.TaskGroup() as group:
            for child in self.sub_agents:
                group.create_task(run(child))
            running = len(self.sub_agents)
            while running:
                item = await merged.get()
                if item is _DONE:
                    running -= 1
                elif isinstance(item, Event):
                    yield item


def _branch_error(ctx: Context, child: BaseAgent, exc: Exception) -> Event:
    code = exc.code if isinstance(exc, AgentsCoreError) else "internal_error"
    message = exc.message if isinstance(exc, AgentsCoreError) else f"{type(exc).__name__}: {exc}"
    event = ctx.for_agent(child.name).event(
        EventType.ERROR, error=ErrorInfo(code=code, message=message, failure="non_fatal")
    )
    return event
