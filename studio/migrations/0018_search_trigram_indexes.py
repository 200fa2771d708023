"""Trigram indexes for the session search on PostgreSQL: ``icontains`` is
``UPPER(column) LIKE UPPER('%q%')``, which a B-tree cannot serve; a GIN index of
``UPPER(column)`` with ``gin_trgm_ops`` can, so a search reads the events that match
instead of every event. SQLite has no such index and scans (its search stays a scan
of the owner's sessions' events through ``event_seq_unique_per_session``)."""

from typing import Any

from django.db import migrations

INDEXES = {
    "event_text_trgm": ("studio_event", "text"),
    "session_title_trgm": ("studio_session", "title"),
}


def create(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, (table, column) in INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (UPPER("{column}") gin_trgm_ops)'
        )


def drop(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("studio", "0017_span_costs")]

    operations = [migrations.RunPython(create, drop)]
