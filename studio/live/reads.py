"""Reading a session for its viewers: who may watch it, and its stored events."""

from __future__ import annotations

import uuid
from urllib.parse import parse_qs

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from studio import wire
from studio.live.protocol import (
    CLOSE_BAD_REQUEST,
    CLOSE_NOT_FOUND,
    CLOSE_UNAUTHENTICATED,
    PAGE_SIZE,
)
from studio.models import Event, Session


class Refused(Exception):
    """A websocket that must be closed with ``close_code``."""

    def __init__(self, close_code: int, reason: str) -> None:
        super().__init__(reason)
        self.close_code = close_code


def authorise(
    user: AbstractBaseUser | AnonymousUser, session_id: str, query_string: bytes
) -> tuple[Session, int]:
    """The session ``user`` may watch and the ``after`` seq to watch it from, or
    ``Refused``: 4401 signed out, 4404 for a session that is not theirs, whether it
    exists or not (as the API answers 404 for both), 4400 for a bad ``after``."""
    if not user.is_authenticated:
        raise Refused(CLOSE_UNAUTHENTICATED, "sign in first")
    try:
        pk = uuid.UUID(session_id)
    except ValueError:
        raise Refused(CLOSE_NOT_FOUND, "no such session") from None
    session = Session.objects.filter(pk=pk, owner_id=user.pk).first()
    if session is None:
        raise Refused(CLOSE_NOT_FOUND, "no such session")
    after = _after(query_string)
    if after > session.last_seq:
        raise Refused(CLOSE_BAD_REQUEST, f"after is past the session's last seq {session.last_seq}")
    return session, after


def batched(query_string: bytes) -> bool:
    """Whether the viewer asked for its frames in batches (``batch=1``; ``0`` or absent:
    one frame a message), or ``Refused`` with 4400."""
    values = parse_qs(query_string.decode("latin1")).get("batch", ["0"])
    if len(values) != 1 or values[0] not in ("0", "1"):
        raise Refused(CLOSE_BAD_REQUEST, "batch must be 0 or 1")
    return values[0] == "1"


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
    return [(seq, wire.payload_text(payload)) for seq, payload in page]


def cursor(session_pk: uuid.UUID) -> tuple[int, str] | None:
    """The session's last seq and status, or ``None`` once it is deleted."""
    row = Session.objects.filter(pk=session_pk).values_list("last_seq", "status").first()
    return None if row is None else (row[0], row[1])
