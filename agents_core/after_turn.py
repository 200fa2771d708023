"""The model calls a runner makes once its turn's agent is done: the key facts it saves
to memory (``agents_core.memory``) and the summary of a long session
(``agents_core.compaction``).

Each is a span of its own under the turn's root agent (``AfterTurnCall``), recorded by
the event that carries its answer, or by a non-fatal error when it fails (the turn has
ended well, and stands). A call still unanswered ``SHOWN_AFTER_S`` after it started
shows itself live (``shown_if_slow``), as an agent's model call does: a summary of a
long session can take seconds, which a viewer would otherwise see as a run that keeps
running after its agent ended, with nothing under way. Cancelling the run cuts such a
call off at once, as it does an agent's, and records it on its span.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agents_core._step_loop import SHOWN_AFTER_S
from agents_core.events import ErrorInfo, Event, EventType, new_id, utc_now
from agents_core.span_contract import AFTER_TURN, KEY_FACTS_CUT_OFF, SUMMARY_CUT_OFF

if TYPE_CHECKING:
    from agents_core.context import CancellationToken

__all__ = ["AfterTurnCall"]

_CUT_OFF = {EventType.MEMORY_SAVED: KEY_FACTS_CUT_OFF, EventType.COMPACTION: SUMMARY_CUT_OFF}
"""The error code of each kind of call cut off before it answered."""


@dataclass(frozen=True, slots=True)
class AfterTurnCall:
    """One such call of turn ``invocation_id``, from its start: its span and its clock."""

    invocation_id: str
    session_id: str
    span_id: str
    parent_span_id: str | None
    """The turn's root agent span."""
    started_at: datetime
    clock: float
    """``time.monotonic()`` at the start."""

    @classmethod
    def start(cls, events: Sequence[Event], invocation_id: str) -> AfterTurnCall:
        """The call starting now, after the stored ``events`` of its turn."""
        root = next(
            (
                e.span_id
                for e in reversed(events)
                if e.type is EventType.AGENT_START
                and e.parent_span_id is None
                and e.invocation_id == invocation_id
            ),
            None,
        )
        session_id = events[-1].session_id if events else ""
        return cls(invocation_id, session_id, new_id(), root, utc_now(), time.monotonic())

    def fields(self) -> dict[str, Any]:
        """The span fields of the event that records the call, as long as it took so far."""
        return {
            "invocation_id": self.invocation_id,
            "session_id": self.session_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "started_at": self.started_at,
            "latency_ms": (time.monotonic() - self.clock) * 1000,
        }

    def failure(self, *, code: str, said: str, author: str, model: str | None = None) -> Event:
        """The record of the call failing: a non-fatal error on its span, saying why;
        tried once (such calls are not retried). ``code`` names the call
        (``agents_core.span_contract.AFTER_TURN_FAILED``); ``model``, the failing model
        when known."""
        error = ErrorInfo(code=code, message=said, failure="non_fatal", attempts=1)
        return Event(type=EventType.ERROR, author=author, error=error, model=model, **self.fields())

    async def shown_if_slow(
        self,
        making: Coroutine[Any, Any, Event | None],
        kind: EventType,
        *,
        author: str,
        model: str | None = None,
        stop: CancellationToken | None = None,
    ) -> AsyncGenerator[Event]:
        """The event ``making`` records the call with (none: no call was due), preceded,
        when it is still being made ``SHOWN_AFTER_S`` after it started, by a partial
        event of ``kind`` without parts on the call's span: never stored, it lets a
        viewer draw the call while it runs. Started eagerly: when no call is due (most
        turns' summary), it is over before anything is scheduled. ``stop`` cancelled
        while the call is made cuts it off: the event is then a non-fatal error on its
        span, saying after how long."""
        task = asyncio.Task(making, loop=asyncio.get_running_loop(), eager_start=True)
        if stop is not None:
            stop.on_cancel(task.cancel)
        try:
            if not task.done():  # a call is under way
                done, _ = await asyncio.wait({task}, timeout=SHOWN_AFTER_S)
                if not done:
                    fields = {**self.fields(), "latency_ms": None}
                    yield Event(type=kind, author=author, partial=True, model=model, **fields)
            made = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if stop is None or not stop.cancelled or (current and current.cancelling()):
                raise  # not cut off by the run's stop: whoever cancelled this goes on
            made = self._cut_off(kind, author, model)
        finally:
            if not task.done():
                task.cancel()
        if made is not None:
            yield made

    def _cut_off(self, kind: EventType, author: str, model: str | None) -> Event:
        """The record of the call cut off by the run's stop: not counted as the model's
        failure (no attempts), as an agent's cut call is not."""
        fields = self.fields()
        took = f"{fields['latency_ms'] / 1000:.1f} s"
        said = f"the {AFTER_TURN[kind]} call was cut off after {took}, before it answered"
        error = ErrorInfo(code=_CUT_OFF[kind], message=said, failure="non_fatal")
        return Event(type=EventType.ERROR, author=author, error=error, model=model, **fields)
