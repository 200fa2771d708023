"""Imports a portable run bundle (``docs/bundles.md``) as a read-only session of a
user, as ``POST /api/bundles/import/`` does: every check of the API applies, and a
refused bundle stores nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio import bundles, services
from studio.errors import InvalidInputError


class Command(BaseCommand):
    help = "Import a run bundle (.json or .studio-run.zip) as a read-only session of --user."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the bundle file")
        parser.add_argument("--user", required=True, help="the importing user's username")

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()._default_manager
        owner = users.filter(username=options["user"]).first()
        if owner is None:
            raise CommandError(f"no user {options['user']!r}")
        path = Path(options["file"])
        try:
            with path.open("rb") as handle:
                data = handle.read(bundles.MAX_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        try:
            session = services.import_bundle(owner, path.name, data)
        except InvalidInputError as exc:
            problem = exc.problems[0]
            raise CommandError(f"import refused ({problem.code}): {exc}") from None
        self.stdout.write(str(session.pk))
        self.stderr.write(f"imported as session {session.pk}, read-only, owned by {owner}")
