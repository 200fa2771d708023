"""The executor port: where queued runs execute. ``studio.runs.configure`` picks one
adapter at start-up, from ``STUDIO_RUN_EXECUTION``: ``inline.InlineExecutor`` (runs
execute as tasks of the server's event loop) or ``queue.QueuedExecutor`` (runs go to
``manage.py run_worker`` processes through Django's tasks framework). Nothing else
reads the execution mode.

Every server binds its executor to its event loop (``start``), which also starts the
recovery sweeps (``recovery``): whichever adapter executes them, runs whose executor
died are found and ended by the servers.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import contextvars
import logging
import uuid
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any

from agents_core.approvals import Reply
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.live import Status, publish, snapshot
from studio.models import Run
from studio.runs import hooks, parking, recovery

logger = logging.getLogger("studio.runs")


class RunExecutor(abc.ABC):
    """Executes queued runs; see the module docstring.

    ``submit``, ``cancel``, ``pause`` and ``resume`` may be called from any thread
    (services run in worker threads, after their transaction commits); the rest runs on
    the bound loop.
    """

    executes_in_servers: bool
    """Whether the servers execute runs themselves (else worker processes do)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def start(self, *, sweeps: bool = True) -> None:
        """Bind to the running loop and start the recovery sweeps (once per loop);
        without ``sweeps`` (a command that executes only its own runs) bind only."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop, self._tasks = loop, set()
        self._bound()
        if not sweeps:
            return
        self._track(recovery.sweep_forever(self), name="run-recovery")
        self._track(parking.expire_forever(), name="parked-run-time-outs")
        self._track(hooks.sweep_forever(), name="run-hook-sweeps")

    async def aclose(self) -> None:
        """Stop every task (runs still executing end interrupted) and unbind."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop = None

    @abc.abstractmethod
    def submit(self, run: Run) -> None:
        """Execute queued ``run`` (committed), here or in a worker."""

    def cancel(self, run: Run) -> None:
        """``run``'s cancellation is recorded (committed): stop it if it executes here,
        and tell its viewers."""
        self._call_soon(self._publish_stored_status, run.session_id)

    def pause(self, run: Run) -> None:
        """``run``'s pause is recorded (committed): hold it at its next step if it
        executes here, and tell its viewers. A worker reads it from the database."""
        self._call_soon(self._publish_stored_status, run.session_id)

    def resume(self, run: Run) -> None:
        """``run``'s resume is recorded (committed): let it go on if it executes here,
        and tell its viewers. A worker reads it from the database."""
        self._call_soon(self._publish_stored_status, run.session_id)

    @abc.abstractmethod
    async def decide(self, run_id: uuid.UUID, session_key: str, decision: Reply) -> None:
        """Deliver ``decision`` (a verdict on an approval, or an answer to a question) to
        run ``run_id``, which waits on the call it names (``ConflictError``
        ``<kind>_not_pending`` when it no longer does, ``<kind>_not_delivered`` when it
        could not be reached; see ``refusal``)."""

    async def status(self, session_pk: uuid.UUID) -> Status:
        """The session's status, as viewers see it."""
        return await db_sync_to_async(snapshot)(session_pk)

    def executes(self, run_id: uuid.UUID) -> bool:
        """Whether this process executes run ``run_id`` right now (recovery leaves it)."""
        return False

    def waiting_for_a_worker(self, run_ids: list[uuid.UUID], now: datetime) -> set[uuid.UUID]:
        """The queued runs among ``run_ids`` that merely wait to be executed."""
        return set()

    @abc.abstractmethod
    def show_calls(self, run_id: uuid.UUID) -> None:
        """A viewer joined run ``run_id``'s session: its executor sends the model calls in
        flight that showed themselves again (``published.Execution.show_calls``)."""

    def lost(self, run_id: uuid.UUID) -> None:  # noqa: B027  (most adapters keep nothing)
        """Run ``run_id``'s executor died and recovery ended the run: forget it."""

    # For the adapters

    def _bound(self) -> None:  # noqa: B027  (most adapters keep nothing)
        """Called once bound to a new loop: drop what belonged to the old one."""

    def _call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback, *args, context=contextvars.Context())

    def _track(self, coroutine: Coroutine[Any, Any, None], *, name: str) -> None:
        # A fresh context: a run must not inherit the request (or the sync worker
        # thread's asgiref state) that happened to queue it.
        loop = asyncio.get_running_loop()
        task = loop.create_task(coroutine, name=name, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _publish_stored_status(self, session_pk: uuid.UUID) -> None:
        self._track(_publish_status(session_pk), name=f"status-{session_pk}")


async def _publish_status(session_pk: uuid.UUID) -> None:
    status = await db_sync_to_async(snapshot)(session_pk)
    await publish(session_pk, status=status)


WAITS_FOR = {"approval": "approval", "answer": "question"}
"""The name conflict codes give what a reply's call waits for, by the reply's kind."""


def refusal(reply: Reply, message: str, *, delivered: bool = True) -> ConflictError:
    """The conflict of a reply its run refused (``approval_not_pending``,
    ``question_not_pending``) or that never reached it (``..._not_delivered``)."""
    outcome = "not_pending" if delivered else "not_delivered"
    return ConflictError(message, code=f"{WAITS_FOR[reply.kind]}_{outcome}")
