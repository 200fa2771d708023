"""Pausing a running invocation between its steps: ``PauseGate``, held from outside the
agent tree, and ``pause_point``, where agents wait at it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agents_core.events import Event, EventType, Part, TextPart, new_id

if TYPE_CHECKING:
    from agents_core.context import Context

__all__ = ["PauseGate", "pause_point", "stop_clock_while_held"]


@dataclass(slots=True)
class PauseGate:
    """Holds a running invocation between steps while it is paused.

    ``pause`` closes the gate and ``resume`` opens it, from outside the agent tree;
    agents pass through it before each step (``pause_point``), so a pause takes effect
    once the current model or tool call is done. While an agent is held, the runner
    stops the wall-time clock (``on_hold`` / ``on_release``); a cancellation still ends
    the invocation at once.
    """

    reason: str | None = None
    _paused: bool = False
    _holding: bool = False
    _opened: asyncio.Event = field(default_factory=asyncio.Event)
    _on_hold: list[Callable[[], object]] = field(default_factory=list)
    _on_release: list[Callable[[], object]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._opened.set()

    @property
    def paused(self) -> bool:
        """Whether a pause is asked (the invocation may not have reached a step yet)."""
        return self._paused

    def pause(self, reason: str = "paused by request") -> None:
        """Hold the invocation at its next step, until ``resume``."""
        self._paused, self.reason = True, reason
        self._opened.clear()

    def resume(self) -> None:
        """Let a paused invocation go on (nothing happens when it is not paused)."""
        self._paused, self.reason = False, None
        self._opened.set()

    def on_hold(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` each time an agent starts being held."""
        self._on_hold.append(callback)

    def on_release(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` each time a held agent is let go."""
        self._on_release.append(callback)

    def claim_announcement(self) -> bool:
        """Whether the caller is the first agent held by this pause, which announces it."""
        if self._holding:
            return False
        self._holding = True
        return True

    def end_announcement(self) -> None:
        """The announcer was let go: the next pause is announced again."""
        self._holding = False

    async def hold(self) -> None:
        """Wait until the gate is open; the wall-time clock stops meanwhile."""
        if self._opened.is_set():
            return
        for callback in self._on_hold:
            callback()
        try:
            await self._opened.wait()
        finally:
            for callback in self._on_release:
                callback()


async def pause_point(ctx: Context) -> AsyncGenerator[Event]:
    """A place between steps where a paused invocation waits until it is resumed.

    The first agent held by a pause yields a ``run_paused`` event, stored before it
    waits, then ``run_resumed`` when the gate opens: a ``human`` wait span named
    ``pause`` (``agents_core.spans``). Other agents held by the same pause (parallel
    branches) wait without a word. Nothing is yielded when the run is not paused.
    """
    gate = ctx.invocation.pause_gate
    if not gate.paused:
        return
    if not gate.claim_announcement():
        await gate.hold()
        return
    span = new_id()
    why: list[Part] = [TextPart(text=gate.reason)] if gate.reason else []
    paused = ctx.event(EventType.RUN_PAUSED, span_id=span, parts=why)
    try:
        yield paused
        await gate.hold()
    finally:
        gate.end_announcement()
    yield ctx.event(EventType.RUN_RESUMED, span_id=span, started_at=paused.created_at)


def stop_clock_while_held(deadline: asyncio.Timeout, gate: PauseGate) -> None:
    """Move ``deadline`` on by the time ``gate`` holds the run: paused time is not run
    time. The deadline is off while held, so a long pause does not end the run."""
    left: list[float] = []

    def hold() -> None:
        when = deadline.when()
        if when is not None and not left:
            left.append(when - asyncio.get_running_loop().time())
            deadline.reschedule(None)

    def release() -> None:
        if left:
            deadline.reschedule(asyncio.get_running_loop().time() + left.pop())

    gate.on_hold(hold)
    gate.on_release(release)
