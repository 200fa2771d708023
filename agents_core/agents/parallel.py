"""``ParallelAgent``: children at the same time, each on its own branch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing

from agents_core.agents.base import BaseAgent
from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType
from agents_core.exceptions import (
    AgentsCoreError,
    ConfigurationError,
    FailedByPolicyError,
    LimitExceededError,
)
from agents_core.failures import FailurePolicy

_Delivery = tuple[Event, "asyncio.Future[None]"]
_RunEnding = LimitExceededError | FailedByPolicyError
_Item = _Delivery | _RunEnding | None
"""What a child task sends: an event awaiting delivery, a run-ending failure (a limit, a
``fail`` policy), or None (done)."""


class ParallelAgent(BaseAgent):
    """Runs ``sub_agents`` concurrently; their events are merged live, in arrival order.

    Each child runs on branch ``<branch>.<child name>`` and does not see its siblings.
    A child waits until each of its events has been passed on (and so stored by the
    runner) before it goes on, so its next model call sees its own tool results.
    A child that fails ends as a non-fatal ``error`` event on its branch while the
    others finish; reaching a run limit, or a failure whose policy is ``fail``, cancels
    the others and ends the invocation.
    """

    def __init__(
        self,
        name: str,
        *,
        sub_agents: Sequence[BaseAgent],
        description: str = "",
        on_failure: FailurePolicy | str | None = None,
    ) -> None:
        if not sub_agents:
            raise ConfigurationError(f"parallel agent {name!r} needs at least one sub-agent")
        super().__init__(
            name, description=description, sub_agents=sub_agents, on_failure=on_failure
        )

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        inbox: asyncio.Queue[_Item] = asyncio.Queue()
        failure: _RunEnding | None = None
        # Child tasks never raise (see _run_child), so the group never cancels this task
        # while it is suspended at a yield; stopping early is always an explicit cancel.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_run_child(ctx, c, inbox)) for c in self.sub_agents]
            running = len(tasks)
            while running:
                item = await inbox.get()
                if item is None:
                    running -= 1
                    continue
                if isinstance(item, LimitExceededError | FailedByPolicyError):
                    failure = item
                    _cancel(tasks)
                    break
                event, delivered = item
                try:
                    yield event
                except GeneratorExit:  # our consumer stopped early: stop the children
                    _cancel(tasks)
                    break
                if not delivered.done():
                    delivered.set_result(None)
        if failure is not None:
            raise failure


async def _run_child(ctx: Context, child: BaseAgent, inbox: asyncio.Queue[_Item]) -> None:
    branch_ctx = ctx.for_branch(child.name)
    resume = ctx.invocation.resume
    if resume is not None and resume.skips(child.name, branch_ctx.branch):
        inbox.put_nowait(None)  # it finished before the turn was interrupted
        return

    async def deliver(event: Event) -> None:
        delivered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        inbox.put_nowait((event, delivered))
        await delivered

    try:
        async with aclosing(child.astream(branch_ctx)) as events:
            async for event in events:
                await deliver(event)
    except (LimitExceededError, FailedByPolicyError) as exc:
        inbox.put_nowait(exc)
    except Exception as exc:
        await deliver(_branch_error(branch_ctx, child, exc))
    finally:
        inbox.put_nowait(None)


def _cancel(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()


def _branch_error(ctx: Context, child: BaseAgent, exc: Exception) -> Event:
    code = exc.code if isinstance(exc, AgentsCoreError) else "internal_error"
    message = exc.message if isinstance(exc, AgentsCoreError) else f"{type(exc).__name__}: {exc}"
    return ctx.for_agent(child.name).event(
        EventType.ERROR, error=ErrorInfo(code=code, message=message, failure="non_fatal")
    )
