"""Where a forked session came from: its parent session and the fork point there.

A mixin of ``Session`` (its own module, to keep the models' one file short). The parent
is a plain link that deleting the parent sets to null: a fork holds copies of what it
needs, so it stays readable on its own. The fork point is kept as plain values (the
parent's seq and event id), which say where it forked even once the parent is gone.
"""

from __future__ import annotations

from django.db import models


class ForkOrigin(models.Model):
    parent = models.ForeignKey(
        "studio.Session",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="forks",
        editable=False,
        help_text="The session this one was forked from (null: not a fork, or its parent "
        "was deleted).",
    )
    fork_seq = models.PositiveIntegerField(
        null=True, blank=True, editable=False, help_text="The fork point's seq in the parent."
    )
    fork_event_id = models.CharField(
        max_length=64, blank=True, editable=False, help_text="The fork point's event id."
    )

    class Meta:
        abstract = True

    @property
    def is_fork(self) -> bool:
        return self.fork_seq is not None
