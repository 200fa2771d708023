"""Executes queued runs (``STUDIO_RUN_EXECUTION=worker``); see ``studio.runs.tasks``.

``django_tasks_db``'s ``db_worker`` with Studio's defaults. The other ``db_worker``
options apply. Unlike ``db_worker``, it

- refuses to start unless runs go to workers;
- polls the queue every 0.2 s rather than every second;
- never autoreloads: a reload would cut the run in progress, and killing the reloader
  would leave its child running;
- imports what runs import lazily before its first run (``runs.preload``), then
  freezes its start-up heap (``studio.heap``);
- executes up to ``--concurrency`` runs at once (16 by default), all on one event loop
  kept for the process (``serve``), rather than one run at a time, each on a new loop: a
  run spends most of its time waiting on its model, and a process per live run cost
  ~190 MiB a run;
- on SIGINT or SIGTERM ends the run in progress ``interrupted`` at once, as a stopping
  server does, rather than waiting for it to finish (which may take many minutes);
- waits for an unreachable database to come back rather than exiting;
- on stopping, exports the traces of the runs it ended (``studio.traces.otel``), for
  a bounded time.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from argparse import ArgumentParser, ArgumentTypeError
from concurrent.futures import Future, ThreadPoolExecutor
from types import FrameType
from typing import Any

from asgiref.sync import sync_to_async
from django.core.management.base import CommandError
from django.db import connections
from django_tasks_db.management.commands import db_worker
from django_tasks_db.models import DBTaskResult

from studio import heap, runs
from studio.runs import execute, records, tasks
from studio.traces import otel

logger = logging.getLogger("studio.worker")

DEFAULT_CONCURRENCY = 16
"""Runs a worker executes at once, unless ``--concurrency`` says otherwise."""


class Worker(db_worker.Worker):
    """``db_worker``'s worker, executing up to ``concurrency`` claimed runs at once on the
    event loop ``serve`` keeps (one at a time on the polling thread when not served).

    Each run executes through ``db_worker``'s own ``run_task`` (its signals, its result
    recorded), called in a thread of that loop, so the run's coroutine runs on the loop
    and its ORM work on that thread. The polling loop claims a task only when there is
    room to start it at once: a run claimed here never waits behind the others while
    another worker could have taken it."""

    def __init__(self, *, concurrency: int = 1, **options: Any) -> None:
        super().__init__(**options)
        self.concurrency = concurrency
        self.loop: asyncio.AbstractEventLoop | None = None
        self._threads = ThreadPoolExecutor(concurrency, thread_name_prefix="run")
        self._room = threading.Condition()
        self._executing: set[Future[None]] = set()
        self._started = 0

    def run_task(self, db_task_result: DBTaskResult[Any, Any]) -> None:
        """Start claimed ``db_task_result`` beside the runs executing; return once there
        is room for one more (or the worker stops)."""
        if self.loop is None:
            super().run_task(db_task_result)
            return
        call = sync_to_async(self._run_task, thread_sensitive=False, executor=self._threads)
        with self._room:
            future = asyncio.run_coroutine_threadsafe(call(db_task_result), self.loop)
            self._executing.add(future)
            self.running_task = True
            self._started += 1
        future.add_done_callback(self._finished)
        # With --max-tasks, the last one allowed is waited for, as db_worker counts ended ones.
        last = self.max_tasks is not None and self._started >= self.max_tasks
        room = 1 if last else self.concurrency
        with self._room:
            while self.running and len(self._executing) >= room:
                self._room.wait(timeout=1.0)

    def _run_task(self, db_task_result: DBTaskResult[Any, Any]) -> None:
        try:
            super().run_task(db_task_result)
        finally:  # the thread may wait long for its next run: it keeps no connection
            connections.close_all()

    def _finished(self, future: Future[None]) -> None:
        with self._room:
            self._executing.discard(future)
            self.running_task = bool(self._executing)
            self._room.notify_all()

    async def drain(self) -> None:
        """Wait for the runs executing to end (stopping, they end ``interrupted``)."""
        with self._room:
            executing = [asyncio.wrap_future(future) for future in self._executing]
        await asyncio.gather(*executing, return_exceptions=True)
        self._threads.shutdown()

    def run(self) -> None:
        """``db_worker``'s loop, which stops the process when the database does not
        answer a poll; here the worker waits for it to come back instead."""
        while True:
            try:
                super().run()
                connections.close_all()
                return
            except execute.DATABASE_GONE:
                logger.warning("the database is unreachable; polling again in 1 s", exc_info=True)
            if not self.running:
                return
            time.sleep(1)

    def shutdown(self, signum: int, frame: FrameType | None) -> None:
        tasks.interrupt_executing()
        super().shutdown(signum, frame)


class Command(db_worker.Command):
    help = "Execute the runs servers queue, until SIGINT or SIGTERM (STUDIO_RUN_EXECUTION=worker)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        if runs.executor().executes_in_servers:
            return  # no queue to name: handle() says why
        super().add_arguments(parser)
        parser.set_defaults(interval=0.2, reload=False)
        parser.add_argument(
            "--concurrency",
            type=_concurrency,
            default=DEFAULT_CONCURRENCY,
            help=f"Runs executed at once (default {DEFAULT_CONCURRENCY})",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if runs.executor().executes_in_servers:
            raise CommandError(
                "run_worker needs STUDIO_RUN_EXECUTION=worker (and REDIS_URL); with inline "
                "execution the servers run the runs themselves"
            )
        if options["reload"]:
            raise CommandError("run_worker does not autoreload: a reload would cut a run")
        self.configure_logging(options["verbosity"])
        queue_names = options["queue_name"].split(",")
        excluded = options["exclude_queues"].split(",") if options["exclude_queues"] else []
        if excluded and "*" not in queue_names:
            raise CommandError("--exclude-queues can only be used with --queue-name=*")
        worker = Worker(
            queue_names=queue_names,
            interval=options["interval"],
            batch=options["batch"],
            backend_name=options["backend_name"],
            startup_delay=options["startup_delay"],
            max_tasks=options["max_tasks"],
            worker_id=options["worker_id"],
            excluded_queue_names=excluded,
            concurrency=options["concurrency"],
        )
        runs.preload()  # not in its first run, stalling the loop and its lease renewals
        heap.freeze_startup_heap()
        worker.configure_signals()
        self.stderr.write(f"worker {records.PROCESS_ID} started")
        try:
            serve(worker)
        finally:
            otel.shutdown()  # the traces of the runs it ended, within a bound


def _concurrency(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ArgumentTypeError("must be 1 or more")
    return number


def serve(worker: Worker) -> None:
    """Run ``worker``'s polling loop in a thread of an event loop kept for the process,
    and its runs on that loop; once the polling stops, wait for the runs to end.

    A task that is a coroutine function (``tasks.execute_queued_run``) is called through
    asgiref's ``async_to_sync``, which runs it on a new event loop each time unless its
    thread came from an event loop's ``sync_to_async``: then it runs on that loop. So
    every run executes on this one loop, and what a loop keeps lasts from run to run:
    the channel layer's Redis connections above all (opening them cost each run ~6% of
    the worker's CPU), and the group-commit writer, as on a server. The ORM work of a
    run happens on the thread that called it (asgiref hands it back there)."""

    async def poll() -> None:
        worker.loop = asyncio.get_running_loop()
        try:
            await sync_to_async(worker.run, thread_sensitive=False)()
        finally:
            await worker.drain()

    asyncio.run(poll())
