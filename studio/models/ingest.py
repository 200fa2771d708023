"""Traces ingested over OTLP (``studio.services.ingest``): the tokens exporters sign in
with, the external agents they report for, and which run each trace became.

One trace of one owner is one run, in a session of its own: spans of the trace sent in
later requests append to that run. The trace id is unique per owner only: the same
trace id sent with another user's token makes that user's own run."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from studio.models import Session
from studio.models.runs import Run
from studio.models.tokens import AccessToken

INGEST_TOKEN_PREFIX = "sotlp_"  # noqa: S105  (a marker, not a secret)


class IngestToken(AccessToken):
    """One of ``owner``'s OTLP ingest tokens (``POST /v1/traces``)."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingest_tokens"
    )

    PREFIX = INGEST_TOKEN_PREFIX

    class Meta(AccessToken.Meta):
        pass


class ExternalAgent(models.Model):
    """An agent built elsewhere, known by what its spans call it (``gen_ai.agent.name``,
    else the resource's ``service.name``). Read-only: Studio never runs it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_agents"
    )
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"], name="external_agent_name_unique_per_owner"
            )
        ]

    def __str__(self) -> str:
        return self.name


class IngestedTrace(models.Model):
    """Trace ``trace_id`` of ``owner``: the session and run its spans became."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingested_traces"
    )
    trace_id = models.CharField(max_length=32)
    agent = models.ForeignKey(ExternalAgent, on_delete=models.CASCADE, related_name="traces")
    session = models.OneToOneField(Session, on_delete=models.CASCADE, related_name="ingested")
    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="+")
    root_span_id = models.CharField(max_length=16, blank=True)
    """The trace's root span, once it arrived (the run ends with it)."""
    span_ids = models.JSONField(default=list)
    """The spans stored so far: a span sent again is not stored twice."""
    placeholder_ids = models.JSONField(default=list)
    """Parents opened before they arrived (an exporter sends a span when it ends, so a
    parent comes after its children): an agent span drawn from its first child on,
    which the parent, when it comes, names and closes."""
    asked_call_ids = models.JSONField(default=list)
    """Tool calls a model span asked for before any tool span answered them: its stored
    message carries them, so a tool span sent later answers them without asking again
    (exporters send spans in batches, and a tool that runs past one goes in the next)."""
    answered_call_ids = models.JSONField(default=list)
    """Tool calls a tool span answered: a model span sent later leaves them to it."""
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "trace_id"], name="ingested_trace_unique_per_owner"
            )
        ]

    def __str__(self) -> str:
        return f"trace {self.trace_id}"
