"""The portable run bundle, version 2: one session with its runs, events, agent spec,
model configurations (no secrets), tool schemas, approval decisions, fork lineage and
the bytes of the files its messages attached (``files``, new in version 2; a version 1
bundle, which has no ``files``, is still read).

These pydantic models are the format: ``docs/bundle.schema.json`` is generated from
``Bundle`` (``json_schema()``) and checked in; a test keeps the two equal. Every model
forbids unknown fields, so a field a later version adds is refused by this one rather
than silently dropped, and ``version`` is checked before anything else
(``studio.bundles.checks``). Events are the wire JSON ``agents_core`` writes
(``Event.to_wire()``), validated against ``agents_core.events.Event`` on import.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FORMAT = "studio-run-bundle"
VERSION = 2
SUPPORTED_VERSIONS = frozenset({1, VERSION})
MAX_EVENTS = 50_000
MAX_RUNS = 5_000
MAX_FILES = 200
TEXT = 10_000
"""The longest short text (a title, a message is longer: ``MESSAGE``)."""
MESSAGE = 1_000_000

RunStatusName = Literal[
    "queued",
    "running",
    "paused",
    "waiting",
    "succeeded",
    "degraded",
    "failed",
    "cancelled",
    "interrupted",
]
SessionStatusName = Literal[
    "idle",
    "queued",
    "running",
    "waiting",
    "paused",
    "succeeded",
    "degraded",
    "failed",
    "cancelled",
    "interrupted",
]


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BundleSession(Part):
    """The session as its owner saw it; ``id`` is its id where it was exported."""

    id: str = Field(max_length=64)
    title: str = Field(default="", max_length=200)
    state: dict[str, Any] = Field(default_factory=dict)
    status: SessionStatusName = "idle"
    created_at: datetime
    updated_at: datetime


class ForkLineage(Part):
    """Where the session was forked from, as ids and a seq only (never the parent's
    data): ``parent_session`` is null once the parent was deleted."""

    parent_session: str | None = Field(default=None, max_length=64)
    fork_seq: int = Field(ge=0)
    fork_event_id: str = Field(default="", max_length=64)


class BundleRun(Part):
    """One run: its events are the session's after ``start_seq`` with its
    ``invocation_id``. ``resumed_from`` names another run of this bundle; ``replay_of``
    and ``copied_from`` name runs of other sessions (kept as ids, for reading)."""

    id: str = Field(max_length=64)
    invocation_id: str = Field(default="", max_length=64)
    message: str = Field(default="", max_length=MESSAGE)
    status: RunStatusName
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    start_seq: int | None = Field(default=None, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost: Decimal | None = Field(default=None, ge=0, max_digits=20, decimal_places=10)
    cost_currency: str = Field(default="", pattern=r"^([A-Z]{3})?$")
    cost_complete: bool = False
    error_code: str = Field(default="", max_length=64)
    error_message: str = Field(default="", max_length=TEXT)
    timing: dict[str, float] | None = None
    resumed_from: str | None = Field(default=None, max_length=64)
    replay_of: str | None = Field(default=None, max_length=64)
    copied_from: str | None = Field(default=None, max_length=64)


class ModelConfigInfo(Part):
    """A model configuration the spec names, without its key (nor any hint of it):
    provider, model, the base URL without credentials or query, its options (each
    provider's options are a closed list with no secret in it) and prices."""

    name: str = Field(max_length=100)
    provider: str = Field(max_length=32)
    model: str = Field(default="", max_length=200)
    base_url: str = Field(default="", max_length=500)
    options: dict[str, Any] = Field(default_factory=dict)
    price_input: Decimal | None = Field(default=None, ge=0, max_digits=14, decimal_places=6)
    price_cached_input: Decimal | None = Field(default=None, ge=0, max_digits=14, decimal_places=6)
    price_output: Decimal | None = Field(default=None, ge=0, max_digits=14, decimal_places=6)
    price_currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")


class ToolSchema(Part):
    """A tool the agent could call, as its model was shown it."""

    name: str = Field(max_length=200)
    description: str = Field(default="", max_length=TEXT)
    parameters: dict[str, Any] = Field(default_factory=dict)


class ToolSet(Part):
    """The tools of one tool reference of the spec (``tools`` entry ``ref``)."""

    ref: str = Field(max_length=64)
    tools: list[ToolSchema] = Field(default_factory=list, max_length=200)


class BundleAgent(Part):
    """The agent version the session ran: its spec with other agents it referenced
    written out in place (a bundle names no agent outside itself)."""

    name: str = Field(max_length=64)
    version: int = Field(ge=1)
    content_hash: str = Field(default="", max_length=64)
    spec: dict[str, Any]
    model_configs: list[ModelConfigInfo] = Field(default_factory=list, max_length=64)
    tool_schemas: list[ToolSet] = Field(default_factory=list, max_length=64)


class ApprovalInfo(Part):
    """A decision on a tool call (``studio.models.approvals.ApprovalDecision``)."""

    run: str = Field(max_length=64)
    call_id: str = Field(max_length=200)
    tool: str = Field(max_length=200)
    decision: Literal["approve", "deny"]
    channel: Literal["page", "api", "socket", "policy", "timeout"]
    decided_by: str = Field(default="", max_length=150)
    args_hash: str = Field(default="", max_length=64)
    args_shown: dict[str, Any] = Field(default_factory=dict)
    args_approved: dict[str, Any] | None = None
    reason: str = Field(default="", max_length=TEXT)
    decided_at: datetime


class BundleFile(Part):
    """The bytes of a file a user message attached: the ``file`` parts of ``events``
    name it by its SHA-256 (``blob_id``), type and size, which must be these."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    content_type: str = Field(min_length=1, max_length=100)
    size: int = Field(ge=1)
    data: str = Field(json_schema_extra={"contentEncoding": "base64"})
    """The bytes in standard base64 (RFC 4648, padded)."""


class Bundle(Part):
    """A portable run bundle (``format`` and ``version`` say which)."""

    format: Literal["studio-run-bundle"]
    version: Literal[1, 2]
    exported_at: datetime
    session: BundleSession
    fork: ForkLineage | None = None
    agent: BundleAgent | None = None
    runs: list[BundleRun] = Field(default_factory=list, max_length=MAX_RUNS)
    events: list[dict[str, Any]] = Field(default_factory=list, max_length=MAX_EVENTS)
    """Each the full wire JSON of an ``agents_core`` event, in seq order from 1."""
    approvals: list[ApprovalInfo] = Field(default_factory=list, max_length=MAX_EVENTS)
    files: list[BundleFile] = Field(default_factory=list, max_length=MAX_FILES)
    """Version 2: each attached file once, in the order first attached."""


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the format (what ``docs/bundle.schema.json`` holds)."""
    schema = Bundle.model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://studio.invalid/schemas/studio-run-bundle/v{VERSION}.json"
    schema["title"] = f"Studio run bundle, version {VERSION} (version 1 is read too)"
    return schema
