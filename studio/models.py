"""Studio's stored objects. Every row belongs to one owner; ids are UUIDs.

Core values (``agents_core`` sessions and events) are mapped with ``to_core()`` and
``from_core()``; an event's ``payload`` is its full wire JSON, so it round-trips exactly.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import uuid
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core import specs as core_specs
from agents_core.sessions import base as core_sessions
from studio import crypto

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


class ModelConfig(models.Model):
    """A model endpoint an agent spec can name. The API key is only ever stored
    encrypted (``api_key_ciphertext``); its plaintext exists only while in use."""

    class Provider(models.TextChoices):
        OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible"
        SCRIPTED = "scripted", "Scripted (offline)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_configs"
    )
    name = models.CharField(max_length=100)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    base_url = models.URLField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    options = models.JSONField(default=dict, blank=True)
    api_key_ciphertext = models.TextField(blank=True, editable=False)
    api_key_hint = models.CharField(max_length=8, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "model config"
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="model_name_unique_per_owner")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_ciphertext)

    def set_api_key(self, plaintext: str) -> None:
        """Encrypt and keep ``plaintext``; an empty string removes the key."""
        self.api_key_ciphertext = crypto.encrypt(plaintext) if plaintext else ""
        self.api_key_hint = crypto.hint(plaintext) if plaintext else ""

    def api_key(self) -> str:
        """The decrypted key, for the one call that sends it to the provider."""
        return crypto.decrypt(self.api_key_ciphertext) if self.api_key_ciphertext else ""


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


ACTIVE_RUN_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})


class SessionStatus(models.TextChoices):
    """The status of a session's latest run, or ``idle`` before its first."""

    IDLE = "idle"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"


class Session(models.Model):
    """A conversation with one pinned agent version.

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
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="session_owner_created")]

    def __str__(self) -> str:
        return self.title or self.key

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self.key:
            self.key = str(self.id)
        super().save(*args, **kwargs)

    def to_core(self, events: list[Event] | None = None) -> core_sessions.Session:
        """The core session; ``user_id`` is the owner's username (see session_service)."""
        return core_sessions.Session(
            id=self.key,
            app_name=self.app_name,
            user_id=self.owner.get_username(),
            state=self.state,
            events=[event.to_core() for event in events or []],
            created_at=self.created_at,
            updated_at=self.updated_at,
        )


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
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            # Also the timeline's index: (session, seq) range scans for ?after=<seq>.
            models.UniqueConstraint(fields=["session", "seq"], name="event_seq_unique_per_session")
        ]
        indexes = [models.Index(fields=["session", "invocation_id"], name="event_invocation")]

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
            created_at=event.created_at,
        )

    def to_core(self) -> core_events.Event:
        return core_events.Event.model_validate(self.payload)


class Run(models.Model):
    """One user turn of a session: queued by the API, executed by the run manager."""

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
    cost = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    # Crash recovery: the process executing the run renews its lease while it runs and
    # clears both when it records the outcome. A lease left to expire means that
    # process died; its run is then marked interrupted (studio.recovery).
    owner_process = models.CharField(max_length=200, blank=True, editable=False)
    lease_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    start_seq = models.PositiveIntegerField(null=True, blank=True, editable=False)
    """The session's last seq when the run started: its events are the ones after."""

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["session", "-created_at"], name="run_session_created"),
            models.Index(fields=["status"], name="run_status"),
            models.Index(fields=["lease_expires_at"], name="run_lease_expiry"),
        ]

    def __str__(self) -> str:
        return f"run {self.id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE_RUN_STATUSES


class McpServer(models.Model):
    """A Model Context Protocol server whose tools the owner's agents may use.

    ``http`` servers are reached at ``url`` (checked by ``studio.security`` when saved
    and before each connection), with optional ``headers`` kept encrypted. ``stdio``
    servers are programs Studio starts: exactly ``command`` with ``args``, no shell, with
    an environment of allowlisted variables only (``studio.mcp``); only staff create or
    change them. Header and environment values are secrets: stored encrypted, never shown.
    """

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "Local process (stdio)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_servers"
    )
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(core_specs.NAME_PATTERN)],
        help_text="Letters, digits, '_' or '-': agent specs refer to the server by this name.",
    )
    description = models.CharField(max_length=500, blank=True)
    transport = models.CharField(max_length=8, choices=Transport.choices)
    url = models.URLField(max_length=2_000, blank=True)
    headers_ciphertext = models.TextField(blank=True, editable=False)
    header_names = models.JSONField(default=list, blank=True, editable=False)
    command = models.CharField(max_length=1_000, blank=True)
    args = models.JSONField(default=list, blank=True)
    env_ciphertext = models.TextField(blank=True, editable=False)
    env_names = models.JSONField(default=list, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="mcp_name_unique_per_owner"),
            models.CheckConstraint(
                condition=(models.Q(transport="http") & ~models.Q(url=""))
                | (models.Q(transport="stdio") & ~models.Q(command="")),
                name="mcp_transport_has_target",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def command_line(self) -> str:
        """The exact program and arguments, quoted as a POSIX shell would need them:
        what staff approved, shown as text wherever the server appears."""
        return shlex.join([self.command, *self.args]) if self.command else ""

    def set_headers(self, headers: dict[str, str]) -> None:
        self.headers_ciphertext, self.header_names = _seal(headers)

    def headers(self) -> dict[str, str]:
        """The decrypted headers, for the connection that sends them."""
        return _unseal(self.headers_ciphertext)

    def set_env(self, env: dict[str, str]) -> None:
        self.env_ciphertext, self.env_names = _seal(env)

    def env(self) -> dict[str, str]:
        """The decrypted environment values staff stored, for the process that gets them."""
        return _unseal(self.env_ciphertext)


def _seal(values: dict[str, str]) -> tuple[str, list[str]]:
    """A mapping of secrets as one encrypted token, and its (non-secret) names."""
    if not values:
        return "", []
    return crypto.encrypt(json.dumps(values, sort_keys=True)), sorted(values)


def _unseal(token: str) -> dict[str, str]:
    if not token:
        return {}
    values: dict[str, str] = json.loads(crypto.decrypt(token))
    return values
