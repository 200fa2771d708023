"""The event envelope: everything a run produces, stored and streamed in one shape.

One wire format for storage, API, websocket and tests: ``event.model_dump(mode="json")``.
Readers keep accepting older ``schema_version`` values.

Spans (schema version 2). Every agent run, model call, tool call and wait for a person
is a span, and the events say which: ``span_id`` is the span an event opens, closes or
streams (an agent's ``agent_start`` and ``agent_end``; a model call's partial chunks and
its ``agent_message``; a tool call's ``tool_response``, whose id each ``ToolCallPart``
announces; a wait's ``approval_request`` and ``approval_decision``), ``parent_span_id``
the span it happened in, and ``started_at`` when the span an event closes began (its
``created_at`` is when it ended). Version 1 events have none of these.

Control (fields with defaults, so older events read as before): an ``agent_message``
whose answer matched its agent's output schema carries the parsed value as a
``StructuredPart``; ``hooks`` says which hooks rewrote, short-circuited or recovered
the model call (on its ``agent_message``) or tool call (on its ``tool_response``); and
an ``ErrorInfo`` with ``degraded`` marks a failure a ``degrade`` failure policy let the
run go past (on an ``error`` event, or on the failed call's ``tool_response``).

Cached tokens (a field with a default, no new version): ``usage.cached_input_tokens``
is the part of a model call's input served from the provider's prompt cache; events
stored before it read as ``0``. Likewise ``usage.reasoning_tokens``: the part of the
output the model spent thinking.

Model routing (fields with defaults, no new version): a ``model_retry`` event says an
attempt of a model call failed retryably and the call goes again after a backoff (its
``span_id`` and ``started_at`` the call's, as its answer's; ``error.attempts`` counts the
attempts so far), a ``model_fallback`` event that an agent's call moved to the next model
of its chain (``fallback``); an agent with a chain or a cache names on each
``agent_message`` the model that answered (``model``), and ``cached`` marks an answer
served from the response cache (no model was called, and it costs nothing);
``replayed`` likewise an answer a replay played back from its record
(``agents_core.replay``). A call that must wait for its model's shared rate
limit opens a wait span with a ``rate_limit_waiting`` event and closes it with a
``rate_limit_wait`` event (with ``started_at``; with a non-fatal ``error`` when the wait
gave up or the run ended during it). Runs stored before the opening event have only
the closing one.

Files (a part kind, no new version: older events simply have none): a user message may
carry ``FilePart`` references to files stored once, outside the event, by content
(``blob_id`` is the SHA-256 of the bytes); the event holds only the reference, never
the bytes. Thinking streams as partial ``ThinkingPart`` chunks, like text; the stored
message's ``ThinkingPart`` keeps the provider's ``signature`` when it signed it (a
field with a default, no new version).

Artifacts (a field with a default, no new version): a ``tool_response`` whose tool saved
artifacts says which, in ``actions.artifact_delta`` (name -> version saved); the bytes
live in the run's artifact service, never in the event.

Ingested traces (a field with a default, no new version): events Studio made from the
spans of an agent built elsewhere (sent over OTLP) carry the span they came from in
``ingested``, with all its attributes; ``SpanTree`` puts them on the span.

Edits (a field with a default, no new version): a fork's copy of its fork point may be
edited by the user before the fork goes on (studio's ``services.forks``); ``edited``
says what was changed and what it said before, so a timeline shows it was not what the
model, the tool or the user originally produced.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt

from agents_core.contracts import Contract, Cost, ToolCall, ToolResult, Usage, built
from agents_core.event_infos import (  # re-exported: part of the event contract
    ApprovalInfo as ApprovalInfo,
)
from agents_core.event_infos import (
    EditInfo as EditInfo,
)
from agents_core.event_infos import (
    ErrorInfo as ErrorInfo,
)
from agents_core.event_infos import (
    FallbackInfo as FallbackInfo,
)
from agents_core.event_infos import (
    IngestedInfo as IngestedInfo,
)
from agents_core.event_infos import (
    PolicyInfo as PolicyInfo,
)
from agents_core.event_infos import (
    QuestionInfo as QuestionInfo,
)
from agents_core.ids import new_id as new_id  # re-exported: where the SDK reads it

SCHEMA_VERSION = 2


class EventType(StrEnum):
    USER_MESSAGE = "user_message"
    AGENT_START = "agent_start"
    AGENT_END = "agent_end"
    AGENT_MESSAGE = "agent_message"
    """Model output: text, thinking and/or tool calls; ``partial`` for streamed tokens."""
    TOOL_RESPONSE = "tool_response"
    ERROR = "error"
    """A failure. Terminal errors (``error.terminal``) end the invocation."""
    COMPACTION = "compaction"
    APPROVAL_REQUEST = "approval_request"
    """A tool call waits for a person's decision; ``approval`` says which call."""
    APPROVAL_DECISION = "approval_decision"
    """The decision on an approval request (or the timeout fallback)."""
    USER_QUESTION = "user_question"
    """An agent asks the user a question and waits (``question`` says what)."""
    USER_ANSWER = "user_answer"
    """The user's answer to a question (or that nobody answered in time)."""
    POLICY_DECISION = "policy_decision"
    """A policy rule allowed, denied, rewrote or sent for approval a model, tool or
    sub-agent call; ``policy`` says which rule and what it saw."""
    RUN_PAUSED = "run_paused"
    """The run was paused between steps (by request); it waits until resumed. Its text
    says why; it opens a wait span (``span_id``) that ``run_resumed`` closes."""
    RUN_RESUMED = "run_resumed"
    """A paused run goes on; ``started_at`` is when it paused."""
    MODEL_RETRY = "model_retry"
    """An attempt of a model call failed retryably and the call is tried again after a
    backoff; ``error`` says why and how many attempts were made (its text, when next)."""
    MODEL_FALLBACK = "model_fallback"
    """A model call failed (retryably, or its breaker is open) and moves to the next
    model of the agent's chain; ``fallback`` says from which to which, and why."""
    RATE_LIMIT_WAITING = "rate_limit_waiting"
    """A model call waits for its model's shared rate limit; opens a wait span."""
    RATE_LIMIT_WAIT = "rate_limit_wait"
    """A model call waited for its model's shared rate limit; closes that wait span."""
    MEMORY_SAVED = "memory_saved"
    """A turn's key facts, saved to long-term memory as it ended: one text part per fact
    (none when the model found nothing worth keeping); ``usage`` is the model call that
    found them, priced like the author's (the root agent's) other calls."""
    RUN_PARKED = "run_parked"
    """The run stopped executing until a person decides the calls it waits on: it holds
    no executor slot and no model connection meanwhile. Stored last by the execution
    that parks; the run goes on from the record once decided (``agents_core.resume``).
    Its text says which calls it waits on."""
    TOOL_STARTED = "tool_started"
    """The effect journal: a tool with side effects is about to run the call its one
    ``tool_call`` part names. Stored before the tool runs, so a run that dies before
    the call's ``tool_response`` knows the call may have taken effect; a call without
    one certainly did not (``agents_core.ledger``)."""


class TextPart(Contract):
    kind: Literal["text"] = "text"
    text: str


class ThinkingPart(Contract):
    kind: Literal["thinking"] = "thinking"
    text: str
    signature: str = ""
    """The provider's signature of ``text`` (Anthropic's extended thinking), kept so the
    thinking can be sent back with the tool results it led to; empty when unsigned."""


class FilePart(Contract):
    """A file attached to a user message: a reference to bytes stored apart (by their
    SHA-256, ``blob_id``), checked and typed when they were stored."""

    kind: Literal["file"] = "file"
    blob_id: str = Field(pattern=r"^[0-9a-f]{64}$")
    content_type: str = Field(min_length=1, max_length=100)
    size: NonNegativeInt
    name: str = Field(default="", max_length=255)

    @property
    def is_image(self) -> bool:
        return self.content_type.startswith("image/")


class ToolCallPart(Contract):
    kind: Literal["tool_call"] = "tool_call"
    call_id: str = Field(min_length=1)
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    span_id: str | None = None
    """The span of this tool call (closed by its ``tool_response``)."""
    retry_of: str | None = None
    """The call this one runs again: a call an interruption closed before it started
    (``agents_core.resume``). The model did not make this call; its agent did."""

    def to_call(self) -> ToolCall:
        return ToolCall(id=self.call_id, name=self.name, args=self.args)


class ToolResponsePart(Contract):
    kind: Literal["tool_response"] = "tool_response"
    call_id: str = Field(min_length=1)
    name: str
    result: str
    is_error: bool = False

    def to_result(self) -> ToolResult:
        return ToolResult(
            call_id=self.call_id, name=self.name, output=self.result, is_error=self.is_error
        )


class StructuredPart(Contract):
    """An answer parsed and validated against its agent's output schema: the JSON value
    the text part of the same message holds."""

    kind: Literal["structured"] = "structured"
    value: Any


Part = Annotated[
    TextPart | ThinkingPart | FilePart | ToolCallPart | ToolResponsePart | StructuredPart,
    Field(discriminator="kind"),
]


HookStage = Literal["before_model", "after_model", "on_model_error", "before_tool", "after_tool"]


class HookNote(Contract):
    """A hook changed what happened: ``rewrote`` the request, response, call or result;
    ``short_circuited`` the model or tool (answering in its place); ``recovered`` from a
    failed model call."""

    hook: str
    stage: HookStage
    effect: Literal["rewrote", "short_circuited", "recovered"]


class CompactionRange(Contract):
    """The seq range (inclusive) that a compaction event's summary replaces."""

    start_seq: PositiveInt
    end_seq: PositiveInt


class EventActions(Contract):
    """Side effects an event asks the runner and session service to apply."""

    state_delta: dict[str, Any] = Field(default_factory=dict)
    transfer_to_agent: str | None = None
    escalate: bool = False
    end_invocation: bool = False
    compaction: CompactionRange | None = None
    artifact_delta: dict[str, PositiveInt] = Field(default_factory=dict)
    """Artifacts a tool call saved: name -> the version it saved (``agents_core.artifacts``)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class Event(Contract):
    """One thing that happened in a session."""

    id: str = Field(default_factory=new_id)
    type: EventType
    invocation_id: str
    session_id: str
    seq: PositiveInt | None = None
    """Assigned by the session service on append; ``None`` on partial events."""
    author: str
    """``"user"`` or the name of the agent that produced the event."""
    branch: str | None = None
    """Dotted path of the agent that produced it, e.g. ``"root.researcher"``."""
    partial: bool = False
    parts: list[Part] = Field(default_factory=list)
    actions: EventActions = Field(default_factory=EventActions)
    usage: Usage | None = None
    cost: Cost | None = None
    """What this model call cost, when the session store priced it (never zero for
    unknown: ``None``)."""
    latency_ms: float | None = Field(default=None, ge=0)
    error: ErrorInfo | None = None
    approval: ApprovalInfo | None = None
    question: QuestionInfo | None = None
    policy: PolicyInfo | None = None
    hooks: list[HookNote] = Field(default_factory=list)
    """Hooks that changed this model or tool call, in the order they ran."""
    fallback: FallbackInfo | None = None
    edited: EditInfo | None = None
    """The user edited it in a fork (see the module docstring)."""
    model: str | None = None
    """The model (its registry name) that answered, for agents with a chain or cache; on
    a ``model_retry`` or a failed call's error, the model of the chain that failed."""
    cached: bool = False
    """The answer came from the response cache: no model was called; it costs nothing."""
    replayed: bool = False
    """The answer was played back from the record of the run a replay runs again: no
    model was called; it has no usage and costs nothing."""
    ingested: IngestedInfo | None = None
    """The OpenTelemetry span it was made from, on events of traces ingested over OTLP."""
    span_id: str | None = None
    """The span this event opens, closes or streams (see the module docstring)."""
    parent_span_id: str | None = None
    """The span it happened in: its agent's, or the tool call an agent runs for."""
    started_at: AwareDatetime | None = None
    """When the span this event closes began (a model or tool call, a wait)."""
    created_at: AwareDatetime = Field(default_factory=utc_now)
    schema_version: int = SCHEMA_VERSION

    @property
    def text(self) -> str:
        """The concatenated text parts (not thinking)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def files(self) -> list[FilePart]:
        """The files attached to this (user) message."""
        return [p for p in self.parts if isinstance(p, FilePart)]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p.to_call() for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def structured(self) -> StructuredPart | None:
        """The parsed answer of an output schema, if this message has one."""
        return next((p for p in self.parts if isinstance(p, StructuredPart)), None)

    @property
    def tool_results(self) -> list[ToolResult]:
        return [p.to_result() for p in self.parts if isinstance(p, ToolResponsePart)]

    @property
    def is_terminal_error(self) -> bool:
        return self.type is EventType.ERROR and self.error is not None and self.error.terminal

    def is_final_response(self) -> bool:
        """A complete model answer with text and no further tool calls."""
        return (
            self.type is EventType.AGENT_MESSAGE
            and not self.partial
            and not self.tool_calls
            and bool(self.text)
        )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict used by storage, the API and websockets."""
        return self.model_dump(mode="json")


NO_ACTIONS = EventActions()
"""The actions of the SDK's events that ask for none, shared: events are frozen and
nothing changes their actions in place, and every stored event would otherwise keep
four objects of its own that the garbage collector walks (``built_event``)."""


class _NoItems(list[Any]):
    """An empty list that refuses to change: the one the SDK's own events share for the
    parts or hooks they have none of (``NO_ITEMS``). Equal to ``[]`` and dumped as one."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("an event's lists are read-only")

    append = extend = insert = pop = remove = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse


NO_ITEMS: list[Any] = _NoItems()
"""Shared by built events without parts or hooks: events are frozen and nothing
changes their lists in place, and each stored event would otherwise keep two empty
lists of its own for the garbage collector to walk and memory to hold."""


def built_event(**fields: Any) -> Event:
    """An ``Event`` from values the SDK made itself, without validating them again
    (``agents_core.contracts.built``): for the runner's hot path only (agent start and
    end, model messages, tool responses, streamed chunks), each value already what
    validation would produce (an ``EventType``, validated parts and contracts, tz-aware
    datetimes, a non-negative ``latency_ms``). Anything built from outside input goes
    through ``Event(...)``. Without parts or hooks it shares ``NO_ITEMS``."""
    event = built(Event, **fields)
    values = event.__dict__  # not yet shared: the fields set stays as given
    if not values["parts"]:
        values["parts"] = NO_ITEMS
    if not values["hooks"]:
        values["hooks"] = NO_ITEMS
    return event


def user_message(
    session_id: str,
    text: str,
    *,
    invocation_id: str | None = None,
    files: Sequence[FilePart] = (),
) -> Event:
    """The event that opens a turn: the user's message (unsaved), with the references
    of any files attached to it."""
    return Event(
        type=EventType.USER_MESSAGE,
        invocation_id=invocation_id or new_id(),
        session_id=session_id,
        author="user",
        parts=[TextPart(text=text), *files],
        actions=NO_ACTIONS,
    )
