"""Executes queued runs (``STUDIO_RUN_EXECUTION=worker``); see ``studio.worker``.

``django_tasks_db``'s ``db_worker`` with Studio's defaults: it refuses to start unless
runs go to workers; it polls the queue every 0.2 s rather than every second, never
autoreloads (a reload would cut the run in progress, and killing the reloader would
leave its child running); and on SIGINT or SIGTERM the run in progress ends
``interrupted`` at once, as on a stopping server, instead of the worker waiting for it
to finish (which may be many minutes); and when the database does not answer, it waits
for it rather than exiting. The other ``db_worker`` options apply.
"""

from __future__ import annotations

import logging
import time
from argparse import ArgumentParser
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django_tasks_db.management.commands import db_worker

from studio import runs, tasks

logger = logging.getLogger("studio.worker")


class Worker(db_worker.Worker):
    def run(self) -> None:
        """``db_worker``'s loop, which stops the process when the database does not
        answer a poll; here the worker waits for it to come back instead."""
        while True:
            try:
                super().run()
                return
            except runs.DATABASE_GONE:
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
        if settings.STUDIO_RUN_EXECUTION != "worker":
            return  # no queue to name: handle() says why
        super().add_arguments(parser)
        parser.set_defaults(interval=0.2, reload=False)

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.STUDIO_RUN_EXECUTION != "worker":
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
        worker.configure_signals()
        self.stderr.write(f"worker {runs.PROCESS_ID} started")
        worker.run()
