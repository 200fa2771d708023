"""Worker execution (``STUDIO_RUN_EXECUTION=worker``): runs execute in ``manage.py
run_worker`` processes instead of the servers that queued them.

Starting a run enqueues ``studio.tasks.execute_queued_run`` through Django's tasks
framework (``django_tasks_db``: the queue is a table of the same database), after the
run is committed. A worker process takes one task at a time and executes the run with
the code that executes runs inline (``studio.runs.execute_and_publish``): it claims the
run, stores each event, then publishes it through the Redis channel layer, so viewers
on every server see it, and renews the run's lease.

- Cancellation goes through the database: ``cancel_run`` records the run cancelled
  wherever it is asked, and the worker, reading the run's status every ``POLL_S``,
  stops it within a poll.
- Recovery: the servers sweep, as with inline execution; a killed worker's run is
  interrupted once its lease expires. A queued run whose task still waits for a free
  worker is not abandoned (``studio.recovery``).
- Approval decisions reach whichever server they are sent to. That server checks in the
  database that the call waits for one, then relays the decision through the channel
  layer to group ``run.<run uuid>``, which the worker executing the run listens to, and
  waits up to ``DECIDE_TIMEOUT_S`` for its answer: the worker's broker checks it as it
  would inline (a decision already taken, or for other arguments, is refused).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import datetime, timedelta
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.db.models import Q
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult
from pydantic import ValidationError

from agents_core import events as core_events
from agents_core.approvals import ApprovalBroker, ApprovalDecision, ApprovalError
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.models import Event, Run, RunStatus, Session

logger = logging.getLogger("studio.worker")

POLL_S = 0.2
"""How often a worker reads the status of the run it executes, to stop it when it was
cancelled (or interrupted) elsewhere."""

DECIDE_TIMEOUT_S = 5.0
"""How long a server waits for the worker executing a run to answer a decision."""

TASK_PATH = "studio.tasks.execute_queued_run"
"""The task that executes a queued run (``studio.tasks``)."""

_APPROVAL_TYPES = [core_events.EventType.APPROVAL_REQUEST, core_events.EventType.APPROVAL_DECISION]


def run_group(run_id: uuid.UUID | str) -> str:
    """The group the worker executing run ``run_id`` listens to for decisions."""
    return f"run.{run_id}"


def _not_pending(call_id: str) -> ConflictError:
    return ConflictError(
        f"no call {call_id!r} is waiting for approval", code="approval_not_pending"
    )


# The queue


def waiting_for_a_worker(run_ids: list[uuid.UUID], now: datetime) -> set[uuid.UUID]:
    """The queued runs among ``run_ids`` whose task waits for a free worker, or was taken
    by one less than a lease ago (which is about to claim the run): not abandoned."""
    if settings.STUDIO_RUN_EXECUTION != "worker" or not run_ids:
        return set()
    taken_since = now - timedelta(seconds=settings.STUDIO_RUN_LEASE_S)
    pending = Q(status=TaskResultStatus.READY) | Q(
        status=TaskResultStatus.RUNNING, started_at__gte=taken_since
    )
    tasks = DBTaskResult.objects.filter(
        pending,
        task_path=TASK_PATH,
        args_kwargs__kwargs__run_id__in=[str(run_id) for run_id in run_ids],
    )
    found = tasks.values_list("args_kwargs__kwargs__run_id", flat=True)
    return {uuid.UUID(run_id) for run_id in found}


class WorkerLost(Exception):
    """Recorded as the failure of a run's task whose worker died while executing it."""


def fail_orphaned_task(run_id: uuid.UUID) -> int:
    """Mark the task of ``run_id`` failed if it is still recorded as running: its worker
    died (the sweep found the run's lease expired), and nothing else would ever finish
    the row. Returns how many rows it changed."""
    if settings.STUDIO_RUN_EXECUTION != "worker":
        return 0
    orphans = DBTaskResult.objects.filter(
        status=TaskResultStatus.RUNNING,
        task_path=TASK_PATH,
        args_kwargs__kwargs__run_id=str(run_id),
    )
    failed = 0
    for row in orphans.select_for_update():
        row.set_failed(WorkerLost(f"the worker executing run {run_id} stopped; run interrupted"))
        failed += 1
    return failed


# The server's side


async def relay_decision(session: Session, decision: ApprovalDecision) -> None:
    """Deliver ``decision`` to the worker executing ``session``'s run; ``ConflictError``
    when no call of the session waits for it, or the worker refused or did not answer."""
    run_id = await db_sync_to_async(awaiting_run)(session.pk, decision.call_id)
    if run_id is None:
        raise _not_pending(decision.call_id)
    layer = _layer()
    reply_to = await layer.new_channel()
    message = {
        "type": "approval.decide",
        "session_key": session.key,
        "decision": decision.model_dump(mode="json"),
        "reply_to": reply_to,
        # Wall-clock: the worker drops a decision that arrives after the server gave up.
        "answer_by": time.time() + DECIDE_TIMEOUT_S,
    }
    try:
        async with asyncio.timeout(DECIDE_TIMEOUT_S):
            await layer.group_send(run_group(run_id), message)
            answer = await layer.receive(reply_to)
    except TimeoutError:
        raise ConflictError(
            "the worker executing this run did not answer in time; try again",
            code="approval_not_delivered",
        ) from None
    if answer.get("refused"):
        raise ConflictError(str(answer["refused"]), code="approval_not_pending")


def awaiting_run(session_pk: uuid.UUID, call_id: str) -> uuid.UUID | None:
    """The session's running run, if its call ``call_id`` waits for approval according to
    its stored events (requested, not yet decided)."""
    run = (
        Run.objects.filter(session_id=session_pk, status=RunStatus.RUNNING)
        .exclude(start_seq=None)
        .order_by("-created_at")
        .first()
    )
    if run is None:
        return None
    rows = Event.objects.filter(
        session_id=session_pk, seq__gt=run.start_seq, type__in=_APPROVAL_TYPES
    ).order_by("seq")
    waiting = False
    for kind, approval in rows.values_list("type", "payload__approval"):
        if approval.get("call_id") == call_id:
            waiting = kind == core_events.EventType.APPROVAL_REQUEST
    return run.pk if waiting else None


# The worker's side


async def listen_for_decisions(run_id: uuid.UUID, broker: ApprovalBroker) -> None:
    """Deliver the decisions servers relay for run ``run_id`` to ``broker``, answering
    each, until cancelled. A channel layer failure is retried, never fatal to the run."""
    layer = _layer()
    channel = await layer.new_channel()
    pause = 0.1
    try:
        while True:
            try:
                await layer.group_add(run_group(run_id), channel)
                while True:
                    await _answer(layer, broker, await layer.receive(channel))
                    pause = 0.1
            except Exception:
                logger.warning("run %s: no decisions until Redis is back", run_id, exc_info=True)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 2.0)
    finally:
        await asyncio.shield(_leave(layer, run_group(run_id), channel))


async def _leave(layer: BaseChannelLayer, group: str, channel: str) -> None:
    try:
        await layer.group_discard(group, channel)
    except Exception:  # the group expires on its own
        logger.info("could not leave %s", group, exc_info=True)


async def _answer(layer: BaseChannelLayer, broker: ApprovalBroker, message: Any) -> None:
    try:
        reply_to = str(message["reply_to"])
        decision = ApprovalDecision.model_validate(message["decision"])
        session_key = str(message["session_key"])
        answer_by = float(message["answer_by"])
    except (KeyError, TypeError, ValueError, ValidationError):
        logger.warning("ignored a malformed decision message")
        return
    if time.time() > answer_by:
        return  # the server already told its client the decision was not delivered
    answer: dict[str, Any] = {"type": "approval.answer"}
    try:
        broker.decide(decision, session_id=session_key)
    except ApprovalError as exc:
        answer["refused"] = exc.message
    await layer.send(reply_to, answer)


def _layer() -> BaseChannelLayer:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("worker execution needs a channel layer (REDIS_URL)")
    return layer
