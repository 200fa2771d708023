"""Inline execution (the embedded default): runs execute as tasks of the event loop of
the server that queued them, so they outlive the sockets that watch them. Decisions on
approvals are delivered to the run's own broker on that loop, whichever thread or loop
they come from."""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import uuid

from agents_core.approvals import ApprovalError, Reply
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.live import Status, snapshot
from studio.models import Run
from studio.runs.executor import WAITS_FOR, RunExecutor, refusal
from studio.runs.published import Execution, execute_and_publish

DECIDE_TIMEOUT_S = 10.0
"""How long a decision from another thread waits for the executor's loop to take it."""


class InlineExecutor(RunExecutor):
    executes_in_servers = True

    def __init__(self) -> None:
        super().__init__()
        self._executions: dict[uuid.UUID, Execution] = {}

    def submit(self, run: Run) -> None:
        self._call_soon(self._spawn, run.pk)

    def cancel(self, run: Run) -> None:
        self._call_soon(self._cancel, run.pk, run.session_id)

    def pause(self, run: Run) -> None:
        self._call_soon(self._hold, run.pk, run.session_id, True)

    def resume(self, run: Run) -> None:
        self._call_soon(self._hold, run.pk, run.session_id, False)

    async def decide(self, run_id: uuid.UUID, session_key: str, decision: Reply) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            raise _not_pending(decision)
        if asyncio.get_running_loop() is loop:
            self._deliver(run_id, session_key, decision)
            return
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        loop.call_soon_threadsafe(self._deliver_to, done, run_id, session_key, decision)
        async with asyncio.timeout(DECIDE_TIMEOUT_S):
            await asyncio.wrap_future(done)

    async def status(self, session_pk: uuid.UUID) -> Status:
        """From memory while this process executes the session's run."""
        for execution in self._executions.values():
            run = execution.run
            if run is not None and run.session_id == session_pk and run.is_active:
                return execution.status(run)
        return await db_sync_to_async(snapshot)(session_pk)

    def executes(self, run_id: uuid.UUID) -> bool:
        return run_id in self._executions

    def show_calls(self, run_id: uuid.UUID) -> None:
        self._call_soon(self._show_calls, run_id)

    def _show_calls(self, run_id: uuid.UUID) -> None:
        execution = self._executions.get(run_id)
        if execution is not None:
            execution.show_calls()

    def _bound(self) -> None:
        self._executions = {}

    def _spawn(self, run_id: uuid.UUID) -> None:
        running = self._executions.get(run_id)
        if running is not None:  # it parked and is letting go: it is handed on after
            running.wake()
            return
        if run_id not in self._executions:
            self._executions[run_id] = execution = Execution(run_id)
            stopped = functools.partial(self._executions.pop, run_id, None)
            self._track(execute_and_publish(execution, on_stopped=stopped), name=f"run-{run_id}")

    def _cancel(self, run_id: uuid.UUID, session_pk: uuid.UUID) -> None:
        execution = self._executions.get(run_id)
        if execution is not None:
            execution.token.cancel("cancelled by request")
        else:
            self._publish_stored_status(session_pk)

    def _hold(self, run_id: uuid.UUID, session_pk: uuid.UUID, paused: bool) -> None:
        execution = self._executions.get(run_id)
        if execution is not None:
            execution.hold(paused)
        self._publish_stored_status(session_pk)

    def _deliver(self, run_id: uuid.UUID, session_key: str, decision: Reply) -> None:
        execution = self._executions.get(run_id)
        if execution is None:
            raise _not_pending(decision)
        try:
            execution.broker.decide(decision, session_id=session_key)
        except ApprovalError as exc:
            raise refusal(decision, exc.message) from None

    def _deliver_to(
        self,
        done: concurrent.futures.Future[None],
        run_id: uuid.UUID,
        session_key: str,
        decision: Reply,
    ) -> None:
        try:
            self._deliver(run_id, session_key, decision)
        except Exception as exc:
            done.set_exception(exc)
        else:
            done.set_result(None)


def _not_pending(reply: Reply) -> ConflictError:
    return refusal(reply, f"no call {reply.call_id!r} is waiting for {WAITS_FOR[reply.kind]}")
