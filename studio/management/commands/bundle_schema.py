"""Writes the run bundle's JSON Schema (``studio.bundles.format``) to
``docs/bundle.schema.json``, or prints it with ``--stdout``. A test keeps the shipped
file equal to what this writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from studio.bundles import json_schema

SCHEMA_FILE = Path(settings.BASE_DIR) / "docs" / "bundle.schema.json"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


class Command(BaseCommand):
    help = "Write the run bundle's JSON Schema to docs/bundle.schema.json."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--stdout", action="store_true", help="print it instead")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["stdout"]:
            self.stdout.write(schema_text(), ending="")
            return
        SCHEMA_FILE.write_text(schema_text())
        self.stdout.write(f"wrote {SCHEMA_FILE}")
