"""The live protocol's vocabulary: close codes, group messages, frames both ways, and
the flood limit. Described in ``studio.live``."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agents_core.approvals import MAX_ANSWER_CHARS
from studio.ledger import WaitingFor

PAGE_SIZE = 500
"""Stored events read from the database at a time, for backlogs and gaps."""

CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_FLOOD = 4429
CLOSE_TOO_BIG = 4009


LAYER = "live"
"""The channel layer (``CHANNEL_LAYERS`` alias) sessions' live messages go through:
with Redis, its publish/subscribe layer, one ``PUBLISH`` a message and none to receive
it (settings, "Channel layers")."""


def group_name(session_id: uuid.UUID | str) -> str:
    return f"session.{session_id}"


@dataclass(frozen=True, slots=True)
class Status:
    """A session's status frame: its latest run (wire JSON), what that run waits on,
    and the session's last stored seq when it was read."""

    run: dict[str, Any] | None
    waiting_for: WaitingFor
    last_seq: int

    @property
    def key(self) -> tuple[Any, ...]:
        """What a viewer compares to tell whether the status changed."""
        run = self.run or {}
        return (run.get("id"), run.get("status"), run.get("invocation_id"), self.waiting_for)


# Server frames


def event_frame(event_json: str, after_seq: int | None = None) -> str:
    tail = "" if after_seq is None else f', "after_seq": {after_seq}'
    return f'{{"type": "event", "event": {event_json}{tail}}}'


def status_frame(status: Status) -> str:
    return json.dumps({"type": "status", "run": status.run, "waiting_for": status.waiting_for})


def error_frame(code: str, detail: str) -> str:
    return json.dumps({"type": "error", "code": code, "detail": detail})


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


# Client frames


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


class PauseFrame(_Frame):
    type: Literal["pause"]


class ResumeFrame(_Frame):
    type: Literal["resume"]


class ApprovalBody(_Frame):
    """A decision on a pending approval (``POST /api/sessions/{id}/approvals/``)."""

    call_id: Text = Field(min_length=1, max_length=200)
    args_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    decision: Literal["approve", "deny"]
    edited_args: Annotated[dict[str, Any] | None, AfterValidator(_no_nul)] = None
    reason: Text = Field(default="", max_length=2_000)


class ApprovalFrame(ApprovalBody):
    type: Literal["approval"]

    def body(self) -> ApprovalBody:
        return ApprovalBody.model_validate(self.model_dump(exclude={"type"}))


class AnswerBody(_Frame):
    """The user's answer to a question the agent asked (``POST
    /api/sessions/{id}/answers/``), bound to the question's call id and hash."""

    call_id: Text = Field(min_length=1, max_length=200)
    args_hash: str = Field(pattern=r"^[0-9a-f]{64}$")
    text: Text = Field(min_length=1, max_length=MAX_ANSWER_CHARS)


class AnswerFrame(AnswerBody):
    type: Literal["answer"]

    def body(self) -> AnswerBody:
        return AnswerBody.model_validate(self.model_dump(exclude={"type"}))


ClientFrame = (
    UserMessageFrame | CancelFrame | PauseFrame | ResumeFrame | ApprovalFrame | AnswerFrame
)
_CLIENT_FRAME: TypeAdapter[ClientFrame] = TypeAdapter(
    Annotated[ClientFrame, Field(discriminator="type")]
)


class BadFrame(Exception):
    """A client frame that is not one of the protocol's."""


def parse_client_frame(text: str) -> ClientFrame:
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
