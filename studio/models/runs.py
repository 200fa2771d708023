"""A run: one user turn of a session, from queued to ended (``studio.runs``)."""

from __future__ import annotations

import uuid

from django.db import models

from studio.models import ACTIVE_RUN_STATUSES, RunStatus, Session, cost_field


class Run(models.Model):
    """One user turn of a session, or the rest of an interrupted one (``resumed_from``):
    queued by the API, executed by the run manager."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="runs")
    invocation_id = models.CharField(max_length=64, blank=True)
    message = models.TextField()
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cost = cost_field()
    """The sum of its model calls' stored costs (``studio.costs.total``), set when it
    ends; ``None`` when none was known."""
    cost_currency = models.CharField(max_length=3, blank=True)
    cost_complete = models.BooleanField(default=False)
    """Whether ``cost`` covers every model call (none had an unknown cost)."""
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    timing = models.JSONField(null=True, blank=True, editable=False)
    """Where the wall time of the ended run went (``studio.timing``), in ms."""
    # Crash recovery: the process executing the run renews its lease while it runs and
    # clears both when it records the outcome. A lease left to expire means that
    # process died; its run is then marked interrupted (studio.recovery).
    owner_process = models.CharField(max_length=200, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    start_seq = models.PositiveIntegerField(null=True, blank=True, editable=False)
    """The session's last seq when the run started: its events are the ones after."""
    resumed_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="resumptions",
        editable=False,
        help_text="The interrupted run this one goes on from, if any.",
    )
    """The interrupted run this one goes on from (``services.resume_interrupted_run``):
    it has no user message of its own and reads the record its predecessor left."""
    # Parking (studio.runs.parking): a run waiting on a person holds no executor.
    wakes_at = models.DateTimeField(null=True, blank=True, editable=False)
    """While ``waiting``: when the first of its calls times out (and decides itself)."""
    queued_at = models.DateTimeField(null=True, blank=True, editable=False)
    """When a parked run was queued again to go on (recovery counts from then)."""
    copied_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
        help_text="The parent session's run this one copies up to a fork point, if any.",
    )
    """A fork's copy of a run of its parent (``services.forks``): it shows what that run
    did and used up to the fork point, and is never counted again (figures, costs)."""
    replay_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="replays",
        editable=False,
        help_text="The recorded run this one replays, if any.",
    )
    """The run this one replays (``services.replay_run``), in a session of its own: its
    models, tools and people answer from that run's record until the replay diverges."""

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["session", "-created_at"], name="run_session_created"),
            models.Index(fields=["status"], name="run_status"),
            models.Index(fields=["lease_expires_at"], name="run_lease_expiry"),
            models.Index(fields=["created_at"], name="run_created"),  # the overview's range
            models.Index(
                fields=["wakes_at"],
                name="run_waiting_wakes",
                condition=models.Q(status="waiting"),
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATUSES
