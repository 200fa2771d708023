"""Studio's stored objects. Every row belongs to one owner; ids are UUIDs. Agents,
model configurations, sessions and events are here; runs in ``runs``, MCP servers in
``mcp``, the final spans of ended runs in ``traces``.

Core values (``agents_core`` sessions and events) are mapped with ``to_core()`` and
``from_core()``; an event's ``payload`` is its full wire JSON, so it round-trips exactly.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models.functions import Cast
from django.utils import timezone

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core import specs as core_specs
from agents_core.sessions import base as core_sessions
from studio import costs
from studio.models.forks import ForkOrigin

DEFAULT_APP_NAME = "studio"
SESSION_KEY_MAX_LENGTH = 200


class ImmutableError(Exception):
    """An attempt to change a row that is written once (an agent version)."""


def spec_hash(spec: dict[str, Any]) -> str:
    """A content hash of a spec's canonical JSON: equal specs hash equal."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class Agent(models.Model):
    """A named agent definition; its spec lives in immutable, numbered versions."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agents"
    )
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(core_specs.NAME_PATTERN)],
        help_text="Letters, digits, '_' or '-': other specs refer to the agent by this name.",
    )
    description = models.TextField(blank=True)
    current_version = models.ForeignKey(
        "AgentVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    a2a_published = models.BooleanField(
        default=False,
        help_text="Served over A2A (studio.a2a_endpoint) to clients with the owner's token.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="agent_name_unique_per_owner")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def spec(self) -> dict[str, Any] | None:
        """The current spec: that of the latest version."""
        return self.current_version.spec if self.current_version else None


class AgentVersion(models.Model):
    """One saved spec of an agent. Written once, never edited."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    spec = models.JSONField()
    content_hash = models.CharField(max_length=64)
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "number"], name="agent_version_number_unique_per_agent"
            )
        ]

    def __str__(self) -> str:
        return f"{self.agent.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableError("an agent version is never edited; save a new one")
        self.content_hash = spec_hash(self.spec)
        super().save(*args, **kwargs)


def agents_whose_tree(owner: Any, has: Callable[[Mapping[str, Any]], bool]) -> list[str]:
    """The names of ``owner``'s agents with a stored version (any, as stored) in whose
    tree some agent ``has`` what is looked for: a template, a skill it uses."""
    versions = AgentVersion.objects.filter(agent__owner_id=owner.pk).select_related("agent")
    return sorted(
        {
            version.agent.name
            for version in versions.only("spec", "agent__name")
            if any(has(agent) for agent in core_specs.stored_agents(version.spec))
        }
    )


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"  # running, held between steps until resumed (services.resume_run)
    WAITING = "waiting", "Waiting for a person"  # parked: holds no executor (runs.parking)
    SUCCEEDED = "succeeded"
    DEGRADED = "degraded"  # finished past failures a policy let through: error_message says
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


AWAITING_RUN_STATUSES = frozenset({RunStatus.RUNNING, RunStatus.PAUSED, RunStatus.WAITING})
ACTIVE_RUN_STATUSES = AWAITING_RUN_STATUSES | {RunStatus.QUEUED}
FINISHED_RUN_STATUSES = frozenset({RunStatus.SUCCEEDED, RunStatus.DEGRADED})  # no terminal error


class SessionStatus(models.TextChoices):
    """Its latest run's status (``idle`` before one; ``waiting`` while it waits on a person)."""

    IDLE = "idle"
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting", "Waiting for a person"  # an approval or an answer to a question
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    DEGRADED = "degraded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


def cost_field() -> models.DecimalField[Any, Any]:
    return models.DecimalField(
        max_digits=costs.MAX_DIGITS, decimal_places=costs.PLACES, null=True, blank=True
    )


class Session(ForkOrigin):
    """A conversation with one pinned agent version (a fork: ``ForkOrigin``).

    ``key`` is the id ``agents_core`` knows the session by: the UUID as a string for
    sessions studio creates, or the id a caller chose (``create_session(session_id=...)``).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    key = models.CharField(max_length=SESSION_KEY_MAX_LENGTH, unique=True, editable=False)
    app_name = models.CharField(max_length=100, default=DEFAULT_APP_NAME)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="studio_sessions"
    )
    agent_version = models.ForeignKey(
        AgentVersion,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="sessions",
    )
    title = models.CharField(max_length=200, blank=True)
    state = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=SessionStatus.choices, default=SessionStatus.IDLE
    )
    last_seq = models.PositiveIntegerField(default=0, editable=False)
    cost = cost_field()
    """The sum of its ended runs' costs (``costs.total_of``), set as each ends."""
    cost_currency = models.CharField(max_length=3, blank=True)
    cost_complete = models.BooleanField(default=True)
    imported_from = models.JSONField(null=True, blank=True, editable=False)
    """Where an imported session came from (``studio.bundles``); set: it is read-only."""
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["owner", "-created_at"], name="session_owner_created"),
            models.Index(fields=["owner", "cost"], name="session_owner_cost"),  # sorted by cost
        ]

    def __str__(self) -> str:
        return self.title or self.key

    @property
    def read_only(self) -> bool:
        """An imported session: replayed, never continued."""
        return self.imported_from is not None

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.key:
            self.key = str(self.id)
        super().save(*args, **kwargs)

    def to_core(self, events: list[core_events.Event] | None = None) -> core_sessions.Session:
        """The core session with ``events`` (already core events); ``user_id`` is the
        owner's username (see session_service)."""
        return core_sessions.Session(
            id=self.key,
            app_name=self.app_name,
            user_id=self.owner.get_username(),
            state=self.state,
            events=events or [],
            created_at=self.created_at,
            updated_at=self.updated_at,
        )


def payload_texts(rows: models.QuerySet[Event]) -> models.QuerySet[Event, str]:
    """The payloads of event ``rows`` as their JSON text, in the rows' order: for reads
    that hand them on as JSON or validate them as JSON, which skips the ORM's decoding
    of each into a Python dict (and, for a page, encoding it all again)."""
    texts = rows.annotate(payload_text=Cast("payload", models.TextField()))
    return texts.values_list("payload_text", flat=True)


class Event(models.Model):
    """One stored event. ``payload`` is the whole wire JSON; the other columns are
    copies of its fields for queries (timeline, search, runs)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    # No choices: the core owns EventType and may add values; payload is validated by it.
    type = models.CharField(max_length=32)
    author = models.CharField(max_length=100)
    branch = models.CharField(max_length=500, blank=True)
    invocation_id = models.CharField(max_length=64)
    text = models.TextField(blank=True)
    payload = models.JSONField()
    schema_version = models.PositiveSmallIntegerField()
    usage = models.JSONField(null=True, blank=True)
    cost = cost_field()
    """What the model call cost when it was stored (``payload["cost"]``, for sums)."""
    cost_currency = models.CharField(max_length=3, blank=True)
    # A model call's attribution, filled by ``end_run`` from the run's spans (roll-ups).
    run = models.ForeignKey(  # indexed where set: see Meta.indexes
        "Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    # db_default: the session service inserts events with SQL of its own.
    tool = models.CharField(max_length=100, blank=True, db_default="")
    """The tool call it ran inside (an agent called as a tool, or a transfer); blank:
    the run's own agents."""
    model = models.CharField(max_length=200, blank=True, db_default="")
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            # Also the timeline's index: (session, seq) range scans for ?after=<seq>.
            models.UniqueConstraint(fields=["session", "seq"], name="event_seq_unique_per_session")
        ]
        indexes = [
            models.Index(fields=["session", "invocation_id"], name="event_invocation"),
            # The cost roll-ups': an owner's model calls (in a date range), each session's
            # read by index. The condition is the roll-ups' MODEL_CALL exactly
            # (studio.rollups.queries), or PostgreSQL cannot use it and scans every event.
            models.Index(
                fields=["session", "created_at"],
                condition=models.Q(type__in=("agent_message", "compaction", "memory_saved"))
                & (models.Q(usage__isnull=False) | models.Q(cost__isnull=False)),
                name="event_model_call",
            ),
            # A run's claimed calls (and SET_NULL when it goes). Where set only: most events
            # have no run, and with a full index SQLite's planner, which has no statistics,
            # read "run_id IS NULL" through it (two thirds of the events) instead of the
            # partial index below: staff's cost per user took 563 ms at 1,025,831 events.
            models.Index(
                fields=["run"], condition=models.Q(run__isnull=False), name="event_run_claimed"
            ),
            # Staff's cost per user: the calls no ended run has claimed (studio.rollups.days).
            models.Index(
                fields=["created_at"],
                condition=models.Q(type__in=("agent_message", "compaction", "memory_saved"))
                & (models.Q(usage__isnull=False) | models.Q(cost__isnull=False))
                & models.Q(run__isnull=True),
                name="event_unattributed_call",
            ),
            # The overview's sums of model calls by day: only events with usage.
            models.Index(
                fields=["created_at"],
                name="event_usage_created",
                condition=models.Q(usage__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.type} by {self.author}"

    @classmethod
    def from_core(cls, session: Session, event: core_events.Event) -> Event:
        """An unsaved row for a stored core event (its ``seq`` already assigned)."""
        if event.seq is None:
            raise core_exceptions.SessionError("only events with an assigned seq are stored")
        return cls(
            session=session,
            seq=event.seq,
            type=event.type.value,
            author=event.author,
            branch=event.branch or "",
            invocation_id=event.invocation_id,
            text=event.text,
            payload=event.to_wire(),
            schema_version=event.schema_version,
            usage=event.usage.model_dump(mode="json") if event.usage else None,
            cost=event.cost.amount if event.cost else None,
            cost_currency=event.cost.currency if event.cost else "",
            created_at=event.created_at,
        )

    def to_core(self) -> core_events.Event:
        return core_events.Event.model_validate(self.payload)


from studio.models.approvals import ApprovalDecision as ApprovalDecision  # noqa: E402
from studio.models.artifacts import Artifact as Artifact  # noqa: E402
from studio.models.budgets import DayHold as DayHold  # noqa: E402  (rows of their own)
from studio.models.budgets import DaySpend as DaySpend  # noqa: E402
from studio.models.budgets import UserBudget as UserBudget  # noqa: E402
from studio.models.evals import Dataset as Dataset  # noqa: E402
from studio.models.evals import DatasetVersion as DatasetVersion  # noqa: E402
from studio.models.evals import EvalCaseResult as EvalCaseResult  # noqa: E402
from studio.models.evals import EvalRun as EvalRun  # noqa: E402
from studio.models.gates import CachedResponse as CachedResponse  # noqa: E402
from studio.models.gates import IngestWindow as IngestWindow  # noqa: E402
from studio.models.gates import RateWindow as RateWindow  # noqa: E402
from studio.models.gates import SignInWindow as SignInWindow  # noqa: E402
from studio.models.ingest import ExternalAgent as ExternalAgent  # noqa: E402
from studio.models.ingest import IngestedTrace as IngestedTrace  # noqa: E402
from studio.models.ingest import IngestToken as IngestToken  # noqa: E402
from studio.models.mcp import McpServer as McpServer  # noqa: E402  (a row of its own)
from studio.models.mcp_tokens import McpToken as McpToken  # noqa: E402
from studio.models.memory import Memory as Memory  # noqa: E402
from studio.models.model_configs import MAX_PER_MINUTE as MAX_PER_MINUTE  # noqa: E402
from studio.models.model_configs import ModelConfig as ModelConfig  # noqa: E402
from studio.models.prompts import PromptTemplate as PromptTemplate  # noqa: E402
from studio.models.remote_agents import RemoteAgent as RemoteAgent  # noqa: E402
from studio.models.runs import Run as Run  # noqa: E402
from studio.models.skills import Skill as Skill  # noqa: E402
from studio.models.skills import SkillFile as SkillFile  # noqa: E402
from studio.models.traces import RunSpans as RunSpans  # noqa: E402
from studio.models.uploads import Blob as Blob  # noqa: E402
from studio.models.uploads import Upload as Upload  # noqa: E402
from studio.models.usage import ModelDay as ModelDay  # noqa: E402
