"""Executes queued runs (``STUDIO_RUN_EXECUTION=worker``); see ``studio.worker``."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio import runs, worker


class Command(BaseCommand):
    help = "Execute the runs servers queue, until SIGINT or SIGTERM (STUDIO_RUN_EXECUTION=worker)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--poll", type=float, default=worker.POLL_S, help="seconds between polls"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.STUDIO_RUN_EXECUTION != "worker":
            raise CommandError(
                "run_worker needs STUDIO_RUN_EXECUTION=worker (and REDIS_URL); with inline "
                "execution the servers run the runs themselves"
            )
        asyncio.run(self._serve(options["poll"]))

    async def _serve(self, poll_s: float) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        self.stderr.write(f"worker {runs.PROCESS_ID} started")
        await worker.serve(stop, poll_s=poll_s)
