"""The live timeline: channel groups, the messages sent through them, websocket frames.

Persist, then publish. The run manager (``studio.runs``) sends each event to the
session's group only once it is stored (its ``seq`` assigned in the same transaction);
the database is the truth and the channel layer only a fast path, which may drop
messages: viewers fill any gap from the database, and a run never stops because
publishing failed.

Group ``session.<session uuid>`` carries one message type, in the order published:

    {"type": "live.batch",
     "events": [[seq | None, after_seq, "<Event JSON>"], ...],
     "status": {"run": <Run JSON> | None, "waiting_for": ..., "last_seq": N} | None}

Each event is the Event wire JSON (exactly what ``GET /api/sessions/{id}/events/``
returns) as text, so the layer copies one string per viewer. Stored events have their
``seq`` (and ``after_seq`` = seq - 1); partial (token) events ``None`` and ``after_seq``,
the last stored seq when they were published; partials are never stored. ``status``,
when the run started, ended or changed what it waits for, comes after the events;
``last_seq`` is the session's last stored seq then, which a viewer catches up to
before passing the status on. A run's final status is published once its executor has
stored its last event and let go of the run, so no viewer sees a run end before the
events it ends with. A run's publisher sends what it has at once, then gathers what
arrives within ``BATCH_WINDOW_S`` (5 ms) into its next message: a lone event goes out
without delay and a burst in few messages (the channel layer's cost is per message
and per viewer).

Websocket ``/ws/sessions/<session uuid>/?after=<seq>`` (``studio.consumers``), session
cookie auth, origin checked. The server accepts, then closes with 4401 (anonymous),
4404 (no such session), 4403 (another user's session) or 4400 (``after`` not an integer
from 0 to the session's last seq) before any frame. Otherwise it joins the group,
sends the stored events with seq > ``after`` (paged), then live ones. Every
``STUDIO_LIVE_RESYNC_S`` the session's viewers in one process compare with the
database (one read for all of them), so what the channel layer dropped still arrives;
a channel layer outage (Redis stalled or unreachable) never closes the socket, the
viewer catches up from the database instead. Closing the socket never stops a run.
Server frames:

- ``{"type": "event", "event": <Event JSON>}``: stored events, strictly in seq order,
  never a seq twice, never a gap.
- ``{"type": "event", "event": <partial Event JSON, seq null>, "after_seq": N}``: a token
  chunk that belongs between stored events N and N + 1; the stored agent_message that
  follows replaces the chunks before it. Only sent while the viewer is at seq N.
- ``{"type": "status", "run": <Run JSON as GET /api/runs/{id}/> | None, "waiting_for":
  None | "model" | "tool" | "approval"}``: on connect, then whenever it changes. ``run``
  is the session's latest run; ``waiting_for`` is only set while that run is active.
- ``{"type": "error", "code": "...", "detail": "..."}``: a bad or refused client frame;
  the socket stays open. Codes: ``invalid`` (not a known frame), ``run_in_progress``,
  ``too_many_runs``, ``session_has_no_agent``, ``no_active_run``, ``approval_not_pending``,
  ``approval_not_delivered`` (worker execution: the worker did not take the decision in
  time; ``studio.worker``).

Client frames (JSON text, unknown fields refused): ``{"type": "user_message", "text":
...}`` starts a run like ``POST /api/sessions/{id}/messages/``; ``{"type": "cancel"}``
cancels the session's active run; ``{"type": "approval", "call_id", "args_hash",
"decision": "approve" | "deny", "edited_args"?, "reason"?}`` decides a pending approval
like ``POST /api/sessions/{id}/approvals/``. A frame over ``STUDIO_WS_MAX_MESSAGE_BYTES``
closes the socket with 4009, a flood (more than ``STUDIO_WS_BURST`` frames at once or
``STUDIO_WS_RATE_PER_S`` sustained) with 4429. (Not 1009: Daphne's websocket library
lets an application close only with 1000 or 3000-4999. Daphne itself closes with 1009
on frames over its own limit, 1 MiB by default.)
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from channels.layers import get_channel_layer
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from rest_framework.renderers import JSONRenderer

from agents_core import events as core_events
from studio.api.serializers import RunSerializer
from studio.models import Event, Run, RunStatus, Session

logger = logging.getLogger("studio.live")

WaitingFor = Literal["model", "tool", "approval"] | None

PAGE_SIZE = 500
"""Stored events read from the database at a time, for backlogs and gaps."""
PUBLISH_TIMEOUT_S = 5.0
BATCH_WINDOW_S = 0.005
"""After each message, how long a run's publisher gathers events into its next one."""

CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_FLOOD = 4429
CLOSE_TOO_BIG = 4009

TRACKED_TYPES: frozenset[str] = frozenset(
    {
        core_events.EventType.AGENT_MESSAGE,
        core_events.EventType.TOOL_RESPONSE,
        core_events.EventType.APPROVAL_REQUEST,
        core_events.EventType.APPROVAL_DECISION,
    }
)
"""The event types that change what a run waits for."""


def group_name(session_id: uuid.UUID | str) -> str:
    return f"session.{session_id}"


# What a run waits for


@dataclass(slots=True)
class WaitingTracker:
    """Follows a run's stored events (wire JSON) to tell what it waits for: a person's
    approval, a tool still running, or else the model."""

    open_calls: set[str] = field(default_factory=set)
    open_approvals: set[str] = field(default_factory=set)

    def observe(self, wire: Mapping[str, Any]) -> None:
        kind = wire.get("type")
        if kind not in TRACKED_TYPES or wire.get("partial"):
            return
        if kind == core_events.EventType.APPROVAL_REQUEST:
            self.open_approvals.add(wire["approval"]["call_id"])
        elif kind == core_events.EventType.APPROVAL_DECISION:
            self.open_approvals.discard(wire["approval"]["call_id"])
        elif kind == core_events.EventType.AGENT_MESSAGE:
            self.open_calls |= set(_call_ids(wire, "tool_call"))
        else:
            self.open_calls -= set(_call_ids(wire, "tool_response"))

    def waiting_for(self, run_status: str | None) -> WaitingFor:
        if run_status != RunStatus.RUNNING:
            return None
        if self.open_approvals:
            return "approval"
        return "tool" if self.open_calls else "model"


def _call_ids(wire: Mapping[str, Any], kind: str) -> Iterable[str]:
    return (part["call_id"] for part in wire.get("parts", ()) if part.get("kind") == kind)


# Status


@dataclass(frozen=True, slots=True)
class Status:
    run: dict[str, Any] | None
    waiting_for: WaitingFor
    last_seq: int

    @property
    def key(self) -> tuple[Any, ...]:
        """What a viewer compares to tell whether the status changed."""
        run = self.run or {}
        return (run.get("id"), run.get("status"), run.get("invocation_id"), self.waiting_for)


def run_json(run: Run) -> dict[str, Any]:
    """The run exactly as ``GET /api/runs/{id}/`` renders it."""
    rendered: dict[str, Any] = json.loads(JSONRenderer().render(RunSerializer(run).data))
    return rendered


def snapshot(session_pk: uuid.UUID) -> Status:
    """The session's status read from the database: its latest run and, while that run
    is active, what it waits for (derived from its stored events).

    The run is read before the last seq: a run ends only after its last event is
    stored, so ``last_seq`` covers every event of the run as read. A run recorded as
    ended (cancelled elsewhere) while its executor still holds it is shown as running:
    the executor stores its last events, lets go, then publishes the final status."""
    run = Run.objects.filter(session_id=session_pk).order_by("-created_at").first()
    last_seq = Session.objects.filter(pk=session_pk).values_list("last_seq", flat=True).first()
    if run is None:
        return Status(None, None, last_seq or 0)
    if not run.is_active and run.owner_process:
        run.status, run.ended_at = RunStatus.RUNNING, None
        run.error_code = run.error_message = ""
    tracker = WaitingTracker()
    if run.status == RunStatus.RUNNING and run.start_seq is not None:
        rows = Event.objects.filter(
            session_id=session_pk, seq__gt=run.start_seq, type__in=TRACKED_TYPES
        ).order_by("seq")
        for payload in rows.values_list("payload", flat=True).iterator():
            tracker.observe(payload)
    return Status(run_json(run), tracker.waiting_for(run.status), last_seq or 0)


# Reading the timeline


class Refused(Exception):
    """A websocket that must be closed with ``close_code``."""

    def __init__(self, close_code: int, reason: str) -> None:
        super().__init__(reason)
        self.close_code = close_code


def authorise(
    user: AbstractBaseUser | AnonymousUser, session_id: str, query_string: bytes
) -> tuple[Session, int]:
    """The session ``user`` may watch and the ``after`` seq to watch it from, or
    ``Refused`` (checked in this order: 4401, 4404, 4403, 4400)."""
    if not user.is_authenticated:
        raise Refused(CLOSE_UNAUTHENTICATED, "sign in first")
    try:
        pk = uuid.UUID(session_id)
    except ValueError:
        raise Refused(CLOSE_NOT_FOUND, "no such session") from None
    session = Session.objects.filter(pk=pk).first()
    if session is None:
        raise Refused(CLOSE_NOT_FOUND, "no such session")
    if session.owner_id != user.pk:
        raise Refused(CLOSE_FORBIDDEN, "not your session")
    after = _after(query_string)
    if after > session.last_seq:
        raise Refused(CLOSE_BAD_REQUEST, f"after is past the session's last seq {session.last_seq}")
    return session, after


def _after(query_string: bytes) -> int:
    values = parse_qs(query_string.decode("latin1")).get("after", ["0"])
    raw = values[-1]
    if len(values) != 1 or not raw.isascii() or not raw.isdigit():
        raise Refused(CLOSE_BAD_REQUEST, "after must be a non-negative integer")
    return int(raw)


def stored_events(session_pk: uuid.UUID, after: int, upto: int | None) -> list[tuple[int, str]]:
    """Up to ``PAGE_SIZE`` stored events with ``after < seq <= upto``, as (seq, JSON)."""
    rows = Event.objects.filter(session_id=session_pk, seq__gt=after)
    if upto is not None:
        rows = rows.filter(seq__lte=upto)
    page = rows.order_by("seq").values_list("seq", "payload")[:PAGE_SIZE]
    return [(seq, json.dumps(payload, ensure_ascii=False)) for seq, payload in page]


def cursor(session_pk: uuid.UUID) -> tuple[int, str] | None:
    """The session's last seq and status, or ``None`` once it is deleted."""
    row = Session.objects.filter(pk=session_pk).values_list("last_seq", "status").first()
    return None if row is None else (row[0], row[1])


# Frames


def event_frame(event_json: str, after_seq: int | None = None) -> str:
    tail = "" if after_seq is None else f', "after_seq": {after_seq}'
    return f'{{"type": "event", "event": {event_json}{tail}}}'


def status_frame(status: Status) -> str:
    return json.dumps({"type": "status", "run": status.run, "waiting_for": status.waiting_for})


@dataclass(frozen=True, slots=True)
class Batch:
    """A ``live.batch`` message as a process's viewers take it, its status frame
    rendered once for all of them."""

    events: list[tuple[int | None, int, str]]
    status: Status | None = None
    status_text: str = ""

    @classmethod
    def of(cls, message: Mapping[str, Any]) -> Batch:
        events = [(seq, after_seq, text) for seq, after_seq, text in message["events"]]
        if message["status"] is None:
            return cls(events)
        status = Status(**message["status"])
        return cls(events, status, status_frame(status))


def error_frame(code: str, detail: str) -> str:
    return json.dumps({"type": "error", "code": code, "detail": detail})


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _no_nul[T](value: T) -> T:
    """``value``, if no string in it holds a NUL character, which PostgreSQL cannot
    store (in text or JSON)."""
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and "\x00" in item:
            raise ValueError("text must not contain NUL characters")
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


Text = Annotated[str, AfterValidator(_no_nul)]


class UserMessageFrame(_Frame):
    type: Literal["user_message"]
    text: Text = Field(min_length=1, max_length=50_000)


class CancelFrame(_Frame):
    type: Literal["cancel"]


class ApprovalBody(_Frame):
    """A decision on a pending approval (``POST /api/sessions/{id}/approvals/``)."""

    call_id: Text = Field(min_length=1, max_length=200)
    args_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    decision: Literal["approve", "deny"]
    edited_args: Annotated[dict[str, Any] | None, AfterValidator(_no_nul)] = None
    reason: Text = Field(default="", max_length=2_000)


class ApprovalFrame(ApprovalBody):
    type: Literal["approval"]


ClientFrame = Annotated[UserMessageFrame | CancelFrame | ApprovalFrame, Field(discriminator="type")]
_CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)


class BadFrame(Exception):
    """A client frame that is not one of the protocol's."""


def parse_client_frame(text: str) -> UserMessageFrame | CancelFrame | ApprovalFrame:
    try:
        return _CLIENT_FRAME.validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise BadFrame(f"{where}: {first['msg']}" if where else first["msg"]) from None


@dataclass(slots=True)
class TokenBucket:
    """Allows bursts of ``burst`` frames and ``rate`` frames a second sustained."""

    rate: float
    burst: int
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


# Publishing


async def publish(
    session_pk: uuid.UUID,
    events: Sequence[tuple[core_events.Event, int]] = (),
    status: Status | None = None,
) -> None:
    """Send ``events`` (each with its ``after_seq``) and then ``status`` to the viewers of
    ``session_pk`` as one ``live.batch``. Call only once the events are stored (partials:
    as they come). Never raises: viewers resync from the database."""
    message = {
        "type": "live.batch",
        "events": [[event.seq, after, event.model_dump_json()] for event, after in events],
        "status": None if status is None else dataclasses.asdict(status),
    }
    layer = get_channel_layer()
    if layer is None:
        return
    group = group_name(session_pk)
    try:
        async with asyncio.timeout(PUBLISH_TIMEOUT_S):
            await layer.group_send(group, message)
    except Exception:  # a layer outage must not stop the run; viewers resync
        logger.warning("could not publish to %s", group, exc_info=True)


class Publisher:
    """Publishes one session's events and status from one task, in order: what is
    pending goes out at once, and what arrives within ``BATCH_WINDOW_S`` after a
    message (or while it is sent) goes out as the next one. The same frames reach
    viewers, through fewer channel-layer messages, and a status that changed several
    times meanwhile is sent once, as it ended."""

    def __init__(self, session_pk: uuid.UUID) -> None:
        self._session_pk = session_pk
        self._events: list[tuple[core_events.Event, int]] = []
        self._status: Callable[[], Status] | None = None
        self._wakeup = asyncio.Event()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"publisher-{session_pk}", context=contextvars.Context()
        )

    def event(self, event: core_events.Event, after_seq: int) -> None:
        self._events.append((event, after_seq))
        self._wakeup.set()

    def status(self, status: Callable[[], Status]) -> None:
        """The session's status changed: ``status()`` says how, when it is sent."""
        self._status = status
        self._wakeup.set()

    async def aclose(self) -> None:
        """Send what is pending, then stop."""
        self._closing = True
        self._wakeup.set()
        await self._task

    def cancel(self) -> None:
        self._task.cancel()

    async def _run(self) -> None:
        while not (self._closing and not self._events and self._status is None):
            await self._wakeup.wait()
            self._wakeup.clear()
            events, status = self._events, self._status
            self._events, self._status = [], None
            if events or status is not None:
                await publish(self._session_pk, events, None if status is None else status())
            if not self._closing:
                await asyncio.sleep(BATCH_WINDOW_S)
