"""Stored events get the span fields of schema version 2 (``agents_core.span_upgrade``),
so old sessions draw in the waterfall; then ended runs get their wall-time split."""

from typing import Any

from django.db import migrations

from agents_core.span_upgrade import upgrade
from agents_core.spans import SpanTree
from studio.traces.timing import wall_time

BATCH = 500


def upgrade_events(apps: Any, schema_editor: Any) -> None:
    Event = apps.get_model("studio", "Event")
    sessions = Event.objects.filter(schema_version__lt=2).values_list("session_id", flat=True)
    for session_id in sessions.distinct().iterator():
        rows = list(Event.objects.filter(session_id=session_id).order_by("seq"))
        changed = []
        for row, payload in zip(rows, upgrade(row.payload for row in rows), strict=True):
            if payload != row.payload:
                row.payload, row.schema_version = payload, payload["schema_version"]
                changed.append(row)
        Event.objects.bulk_update(changed, ["payload", "schema_version"], batch_size=BATCH)


def fill_in_timing(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("studio", "Run")
    Event = apps.get_model("studio", "Event")
    for run in Run.objects.filter(ended_at__isnull=False, timing__isnull=True).iterator():
        rows = Event.objects.filter(session_id=run.session_id, seq__gt=run.start_seq or 0)
        if run.invocation_id:
            rows = rows.filter(invocation_id=run.invocation_id)
        payloads = rows.order_by("seq").values_list("payload", flat=True)
        spans = SpanTree().observe_all(payloads.iterator()).spans()
        run.timing = wall_time(run.created_at, run.started_at, run.ended_at, spans)
        run.save(update_fields=["timing"])


class Migration(migrations.Migration):
    dependencies = [
        ("studio", "0005_session_waiting"),
    ]

    operations = [
        migrations.RunPython(upgrade_events, migrations.RunPython.noop),
        migrations.RunPython(fill_in_timing, migrations.RunPython.noop),
    ]
