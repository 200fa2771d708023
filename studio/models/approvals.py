"""The audit trail of approvals: one immutable row per decision on a tool call that
waited for a person (``studio.services.approvals``), whoever or whatever took it."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class DecisionChannel(models.TextChoices):
    """Through what a decision was taken."""

    PAGE = "page"
    API = "api"
    SOCKET = "socket"
    POLICY = "policy"
    TIMEOUT = "timeout", "time-out"


class ApprovalDecision(models.Model):
    """One decision on one call of one run, never changed once stored.

    At most one per call (``approval_decision_once``): the row is written in the same
    transaction that delivers the decision to the run, so of two people deciding the
    same call at once one stores it and the other gets a conflict, and the tool runs
    at most once."""

    session = models.ForeignKey(
        "studio.Session", on_delete=models.CASCADE, related_name="approval_decisions"
    )
    run = models.ForeignKey("studio.Run", on_delete=models.CASCADE, related_name="+")
    call_id = models.CharField(max_length=200)
    tool = models.CharField(max_length=200)
    decision = models.CharField(max_length=10, choices=[("approve", "approve"), ("deny", "deny")])
    channel = models.CharField(max_length=10, choices=DecisionChannel.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Empty when a policy or a time-out decided.",
    )
    decided_by_name = models.CharField(max_length=150, blank=True)
    args_hash = models.CharField(max_length=64, help_text="Of the arguments shown.")
    args_shown = models.JSONField(default=dict)
    args_approved = models.JSONField(
        null=True, blank=True, help_text="What the tool ran with; empty when denied."
    )
    reason = models.TextField(blank=True)
    decided_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(fields=["run", "call_id"], name="approval_decision_once")
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.tool} ({self.call_id})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise ValueError("an approval decision is never changed once stored")
        super().save(*args, **kwargs)

    @property
    def edited(self) -> bool:
        return self.args_approved is not None and self.args_approved != self.args_shown
