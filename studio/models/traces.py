"""A run's final spans, kept as their JSON once it has ended (``studio.traces``)."""

from __future__ import annotations

from django.db import models


class RunSpans(models.Model):
    """The spans of an ended run as the spans API sends them: they never change, and
    deriving them reads every event of the run (half a second at 10,000 events)."""

    run = models.OneToOneField(
        "studio.Run", primary_key=True, on_delete=models.CASCADE, related_name="final_spans"
    )
    spans = models.TextField(help_text="A JSON array of the run's spans (agents_core.spans).")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "run's spans"
        verbose_name_plural = "runs' spans"

    def __str__(self) -> str:
        return f"spans of run {self.run_id}"
