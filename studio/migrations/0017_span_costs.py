"""Final spans kept before spans carried their calls' cost are dropped: the spans API
derives them again from the stored events on first read (``run_spans_json``), now
with each span's cost, and keeps them again."""

from typing import Any

from django.db import migrations


def forget_spans_without_costs(apps: Any, schema_editor: Any) -> None:
    run_spans = apps.get_model("studio", "RunSpans")
    run_spans.objects.exclude(spans__contains='"cost":').delete()


class Migration(migrations.Migration):
    dependencies = [("studio", "0016_day_holds")]

    operations = [migrations.RunPython(forget_spans_without_costs, migrations.RunPython.noop)]
