"""Executing a run with viewers: ``execute_and_publish`` wraps ``execute.execute_run``
for the executors (``inline``, ``worker``): each event and each change of what the run
waits on goes to the session's viewers once stored; a run that parked and was decided
meanwhile is handed back to the executor once it let go."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents_core import events as core_events
from agents_core.approvals import ApprovalBroker
from agents_core.context import CancellationToken
from agents_core.pausing import PauseGate
from studio import runs, wire
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.ledger import CallLedger, waiting_for
from studio.live import Publisher, Status, snapshot
from studio.live.inbox import notify_inbox
from studio.models import Run
from studio.runs import hooks, records
from studio.runs.execute import execute_run, hold, stored_user_message

logger = logging.getLogger("studio.runs")

SHOW_AGAIN_AFTER_S = 0.1
"""How long viewers joining a run whose calls are shown again wait for that sending."""


@dataclass(slots=True)
class Execution:
    """A run this process executes, and what its viewers were last told."""

    run_id: uuid.UUID
    run: Run | None = None
    token: CancellationToken = field(default_factory=CancellationToken)
    broker: ApprovalBroker = field(default_factory=lambda: ApprovalBroker(parks=True))
    """Where decisions on this run's approvals are delivered: one broker per run, so a
    call id (which the model makes up) only ever names a call of this run. A call that
    waits on a person parks the run (``parking``)."""
    gate: PauseGate = field(default_factory=PauseGate)
    """Holds the run between steps while it is paused."""
    ledger: CallLedger = field(default_factory=CallLedger)
    last_seq: int = 0
    published: tuple[Any, ...] | None = None
    """The key of the last status handed to the publisher."""
    woken: bool = False
    """It parked and was queued again at once: it is handed on once it let go."""
    shown_seq: int = 0
    """Stored events up to this seq went to the viewers before the runner yielded them
    (a fresh run's user message, at once, rather than once its agent is built)."""
    calls_shown: dict[str, core_events.Event] = field(default_factory=dict)
    """The model calls that showed themselves (a partial event without parts) and have
    neither streamed nor ended since, by span: sent again to a viewer that joins."""
    publisher: Publisher | None = None
    showing: bool = False
    """The calls shown are to be sent again shortly (``show_calls``)."""

    def wake(self) -> None:
        self.woken = True

    def hold(self, paused: bool) -> None:
        """Pause the run at its next step, or let it go on, as its record now says."""
        if self.run is not None:
            hold(self.run, self.gate, paused=paused)
        elif paused:
            self.gate.pause()
        else:
            self.gate.resume()

    def show_calls(self) -> None:
        """Send the session's viewers the model calls in flight that showed themselves
        again: a viewer joined since, and partial events are not in the backlog. Every
        viewer gets them, so viewers joining together share one sending
        (``SHOW_AGAIN_AFTER_S``), not one each to all."""
        if self.publisher is None or not self.calls_shown or self.showing:
            return
        self.showing = True
        asyncio.get_running_loop().call_later(SHOW_AGAIN_AFTER_S, self._show_again)

    def _show_again(self) -> None:
        self.showing = False
        if self.publisher is not None:
            for call in self.calls_shown.values():
                self.publisher.event(call, self.last_seq)

    def status(self, run: Run) -> Status:
        waiting = waiting_for(self.ledger, run.status)
        return Status(wire.run_payload(run), waiting, self.last_seq)

    def status_key(self, run: Run) -> tuple[Any, ...]:
        """``status(run).key`` without rendering the run: checked on every event."""
        waiting = waiting_for(self.ledger, run.status)
        return (str(run.pk), run.status, run.invocation_id, waiting)


async def execute_and_publish(
    execution: Execution, *, on_stopped: Callable[[], object] = lambda: None
) -> None:
    """Execute ``execution``'s run, publishing each event and status change to the
    session's group; ``on_stopped`` is called once the run stopped, before its final
    status is published."""
    try:
        run = execution.run = await Run.objects.aget(pk=execution.run_id)
    except Run.DoesNotExist:  # deleted before it started
        on_stopped()
        return
    publisher = execution.publisher = Publisher(run.session_id)
    if run.started_at is None and run.resumed_from_id is None:
        said = await db_sync_to_async(stored_user_message)(run)
        if said is not None and said.seq is not None:
            publisher.event(said, said.seq - 1)
            execution.last_seq = execution.shown_seq = said.seq
    try:
        await execute_run(
            run,
            on_event=lambda event: _on_event(execution, publisher, run, event),
            on_claimed=lambda claimed: _on_claimed(execution, publisher, claimed),
            cancel_token=execution.token,
            approvals=execution.broker,
            pause_gate=execution.gate,
            on_woken=execution.wake,
        )
    except ConflictError as exc:  # cancelled (or otherwise ended) before it started
        logger.info("run %s did not start: %s", execution.run_id, exc.message)
    except Exception:
        logger.exception("run %s failed", execution.run_id)
    except asyncio.CancelledError:  # the process is stopping
        publisher.cancel()
        raise
    finally:
        on_stopped()
    if execution.woken:  # decided while it parked: it goes on at once
        runs.executor().submit(run)
    final = await db_sync_to_async(snapshot)(run.session_id)
    publisher.status(lambda: final)
    await publisher.aclose()
    if execution.ledger.waits_for_person:  # it ended while a call waited: not anymore
        await notify_inbox(await db_sync_to_async(records.owner_of)(run))
    await hooks.run_stopped(run)  # e.g. an eval whose case this run was goes on


async def _on_claimed(execution: Execution, publisher: Publisher, run: Run) -> None:
    execution.last_seq = max(execution.last_seq, run.start_seq or 0)
    _status_changed(execution, publisher, run)


async def _on_event(
    execution: Execution, publisher: Publisher, run: Run, event: core_events.Event
) -> None:
    _follow_call(execution, event)
    if event.partial:
        publisher.event(event, execution.last_seq)
        return
    execution.last_seq = event.seq or execution.last_seq
    execution.ledger.observe(event)
    if event.approval is not None or event.question is not None:  # a person's turn
        waiting = execution.ledger.waits_for_person
        owner = await db_sync_to_async(records.person_turn)(run, event, waiting=waiting)
        await notify_inbox(owner)  # it lists questions as well as approvals
    if execution.last_seq > execution.shown_seq:
        publisher.event(event, execution.last_seq - 1)
    _status_changed(execution, publisher, run)


def _follow_call(execution: Execution, event: core_events.Event) -> None:
    """Keep a model call that showed itself until it streams, retries or ends."""
    if event.partial and not event.parts:
        execution.calls_shown[event.span_id or ""] = event
    elif event.span_id in execution.calls_shown:
        del execution.calls_shown[event.span_id]


def _status_changed(execution: Execution, publisher: Publisher, run: Run) -> None:
    key = execution.status_key(run)
    if key != execution.published:
        execution.published = key
        publisher.status(lambda: execution.status(run))
