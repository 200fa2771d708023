"""Writes a session as a portable run bundle (``docs/bundles.md``), as ``GET
/api/sessions/{id}/bundle/`` does: to move a run between Studios from the shell."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio import services
from studio.models import Session


class Command(BaseCommand):
    help = "Write a session as a run bundle (JSON, or a .studio-run.zip with --zip)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session", help="the session's id")
        parser.add_argument(
            "-o", "--output", help="the file to write (default: the bundle's own name, here)"
        )
        parser.add_argument("--zip", action="store_true", help="write a .studio-run.zip")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            session = Session.objects.get(pk=uuid.UUID(options["session"]))
        except (ValueError, Session.DoesNotExist):
            raise CommandError(f"no session {options['session']!r}") from None
        data, _, name = services.export_bundle(session, zipped=options["zip"])
        path = Path(options["output"] or name)
        path.write_bytes(data)
        self.stdout.write(f"wrote {path} ({len(data)} bytes)")
