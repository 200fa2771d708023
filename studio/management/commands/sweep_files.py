"""Remove stored files that no session refers to any more (``studio.files.sweep``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio.files.sweep import sweep

DEFAULT_GRACE_S = 3600


class Command(BaseCommand):
    help = "Remove stored files that no remaining session refers to."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--grace-s",
            type=int,
            default=DEFAULT_GRACE_S,
            help="Leave files used or stored this recently alone (seconds, at least 60).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        grace_s: int = options["grace_s"]
        if grace_s < 60:
            raise CommandError("--grace-s must be at least 60: a message may be on its way")
        swept = sweep(timedelta(seconds=grace_s))
        self.stdout.write(
            f"removed {swept.uploads} upload rows, {swept.blobs} blobs, {swept.strays} stray files"
        )
