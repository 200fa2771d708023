"""Executes queued runs (``STUDIO_RUN_EXECUTION=worker``); see ``studio.runs.tasks``.

``django_tasks_db``'s ``db_worker`` (one run at a time per process) with Studio's
defaults. The other ``db_worker`` options apply. Unlike ``db_worker``, it

- refuses to start unless runs go to workers;
- polls the queue every 0.2 s rather than every second;
- never autoreloads: a reload would cut the run in progress, and killing the reloader
  would leave its child running;
- imports what runs import lazily before its first run (``LAZY_IMPORTS``), then
  freezes its start-up heap (``studio.heap``);
- executes every run on one event loop, kept for the process (``serve``), rather than
  on a new loop per run;
- on SIGINT or SIGTERM ends the run in progress ``interrupted`` at once, as a stopping
  server does, rather than waiting for it to finish (which may take many minutes);
- waits for an unreachable database to come back rather than exiting;
- on stopping, exports the traces of the runs it ended (``studio.traces.otel``), for
  a bounded time.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import time
from argparse import ArgumentParser
from types import FrameType
from typing import Any

from asgiref.sync import sync_to_async
from django.core.management.base import CommandError
from django_tasks_db.management.commands import db_worker

from studio import heap, runs
from studio.runs import execute, records, tasks
from studio.traces import otel

logger = logging.getLogger("studio.worker")

LAZY_IMPORTS = ("agents_core.tools.mcp", "agents_core.tools.a2a", "agents_core.llm.openai")
"""Modules runs import on first use, taking seconds: imported before the first run, so
it does not stall its event loop, and with it its lease renewals, on them."""


class Worker(db_worker.Worker):
    def run(self) -> None:
        """``db_worker``'s loop, which stops the process when the database does not
        answer a poll; here the worker waits for it to come back instead."""
        while True:
            try:
                super().run()
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
        )
        for module in LAZY_IMPORTS:
            importlib.import_module(module)
        heap.freeze_startup_heap()
        worker.configure_signals()
        self.stderr.write(f"worker {records.PROCESS_ID} started")
        try:
            serve(worker)
        finally:
            otel.shutdown()  # the traces of the runs it ended, within a bound


def serve(worker: db_worker.Worker) -> None:
    """Run ``worker``'s polling loop in a thread of an event loop kept for the process.

    A task that is a coroutine function (``tasks.execute_queued_run``) is called through
    asgiref's ``async_to_sync``, which runs it on a new event loop each time unless its
    thread came from an event loop's ``sync_to_async``: then it runs on that loop. So
    every run executes on this one loop, and what a loop keeps lasts from run to run:
    the channel layer's Redis connections above all (opening them cost each run ~6% of
    the worker's CPU), and the group-commit writer, as on a server. The ORM work of a
    run still happens on the polling thread (asgiref hands it back there)."""

    async def poll() -> None:
        await sync_to_async(worker.run, thread_sensitive=False)()

    asyncio.run(poll())
