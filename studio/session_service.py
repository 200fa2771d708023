"""``DjangoSessionService``: ``agents_core`` sessions stored in the ORM.

A core session's ``id`` is ``Session.key`` and its ``user_id`` is the owner's username
(the user model's natural key, ``USERNAME_FIELD``): stable, unique, and what a person
or script naturally names. Sessions are only created for users that exist; an unknown
``user_id`` is a ``SessionError``, never a new account.

``append_event`` is the hot path (every event a run stores): the appends of every run
on an event loop go through one writer task, which commits what arrives together in
one transaction (``studio.group_commit``, ``event_rows.insert_batch``); see
``event_rows.insert_one`` for how one append allocates its seq, and
``_append_retrying`` for how it survives a dropped connection without storing an
event twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import (
    Error,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)
from django.db.models import QuerySet
from django.utils import timezone

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.contracts import compact_model
from agents_core.sessions import base as core_sessions
from studio import costs, event_rows, group_commit, session_cache
from studio.db import db_sync_to_async
from studio.models import SESSION_KEY_MAX_LENGTH, Event, Session, payload_texts

logger = logging.getLogger(__name__)

CONNECTION_ERRORS = (OperationalError, InterfaceError)
RETRY_DELAYS_S = (0.05, 0.25, 1.0)
"""Pauses before the second, third and fourth try of an append that lost its connection."""


class DjangoSessionService(core_sessions.BaseSessionService):
    """``prices`` (by agent name) price each model call as it is stored (``costs``);
    ``summary_price`` prices compaction summaries (their summariser's model);
    ``model_prices`` (by model config name) price answers that name their model (a
    fallback chain's)."""

    def __init__(
        self,
        prices: Mapping[str, costs.Price] | None = None,
        summary_price: costs.Price | None = None,
        model_prices: Mapping[str, costs.Price] | None = None,
    ) -> None:
        self._prices: Mapping[str, costs.Price] = prices or {}
        self._summary_price = summary_price
        self._model_prices = model_prices

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> core_sessions.Session:
        return await db_sync_to_async(_create)(app_name, user_id, state or {}, session_id)

    async def get_session(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> core_sessions.Session | None:
        return await db_sync_to_async(_get)(app_name, user_id, session_id)

    async def update_session(
        self, session_id: str, *, state: dict[str, Any]
    ) -> core_sessions.Session:
        return await db_sync_to_async(_update)(session_id, state)

    async def delete_session(self, session_id: str) -> None:
        await db_sync_to_async(_delete)(session_id)

    async def list_sessions(self, *, app_name: str, user_id: str) -> list[core_sessions.Session]:
        return await db_sync_to_async(_list)(app_name, user_id)

    async def append_event(
        self, session: core_sessions.Session, event: core_events.Event
    ) -> core_events.Event:
        if event.partial:
            raise core_exceptions.SessionError("partial events are never stored")
        priced = costs.priced(event, self._prices, self._summary_price, self._model_prices)
        stored = await group_commit.writer_for_loop(_insert_batch, _append_retrying).append(
            session.id, priced
        )
        if session.events and session.events[-1].id == stored.id:
            return stored  # appended again: this session mirrors it already
        core_sessions.apply_state_delta(session.state, stored.actions.state_delta)
        session.add_stored(stored)
        session.updated_at = stored.created_at
        return stored


async def _append_retrying(
    session_key: str, event: core_events.Event, *, retry: bool = False
) -> core_events.Event:
    """``append_event_sync`` on the ORM thread, tried again after a connection error
    (a restarted server, a dropped socket, a terminated backend) after each pause in
    ``RETRY_DELAYS_S``; the last error propagates.

    Idempotent: a connection can drop after the server committed but before the reply
    arrived, so every retry first looks the event up by its id (``stored_event``) and
    returns the stored one if the lost commit landed (``retry=True``: the first try
    too, for an event of a batch that failed). Stale connections are not checked
    before each try (no ``SELECT 1`` per event): a dead one fails the try and is
    replaced.
    """
    for delay in RETRY_DELAYS_S:
        try:
            return await _append_once(session_key, event, retry=retry)
        except CONNECTION_ERRORS as exc:
            logger.warning(
                "storing event %s lost its database connection (%s); retrying in %.2f s",
                event.id,
                exc,
                delay,
            )
        await asyncio.sleep(delay)
        retry = True
    return await _append_once(session_key, event, retry=True)


def _append_once_sync(
    session_key: str, event: core_events.Event, *, retry: bool
) -> core_events.Event:
    """One try. An event already stored (a retry whose lost commit landed, or the same
    event appended again) is returned as stored, never stored twice."""
    try:
        if retry and (found := stored_event(session_key, event.id)) is not None:
            return found
        return append_event_sync(session_key, event)
    except IntegrityError:
        if (found := stored_event(session_key, event.id)) is not None:
            return found
        raise
    except CONNECTION_ERRORS:
        with contextlib.suppress(Error):
            connection.close()  # the next try opens a new one
        raise


_append_once = db_sync_to_async(_append_once_sync, check_connections=False)


def _insert_batch_sync(items: Sequence[tuple[str, core_events.Event]]) -> list[event_rows.Stored]:
    """``event_rows.insert_batch``; a connection lost on the way is closed, so the
    events' tries alone open a new one."""
    try:
        return event_rows.insert_batch(items)
    except CONNECTION_ERRORS:
        with contextlib.suppress(Error):
            connection.close()
        raise


_insert_batch = db_sync_to_async(_insert_batch_sync, check_connections=False)


def append_event_sync(session_key: str, event: core_events.Event) -> core_events.Event:
    """Store ``event`` in the session keyed ``session_key``, alone (``event_rows.
    insert_one``: joins the caller's transaction if there is one); returns it with its
    seq."""
    seq = event_rows.insert_one(session_key, event)
    return event.model_copy(update={"seq": seq, "session_id": session_key})


def stored_event(session_key: str, event_id: str) -> core_events.Event | None:
    """The event with this id, if it is stored in the session keyed ``session_key``."""
    rows = Event.objects.filter(pk=event_rows.event_row_id(session_key, event_id))
    payload = rows.values_list("payload", flat=True).first()
    return None if payload is None else core_events.Event.model_validate(payload)


def _owner_lookup(user_id: str) -> dict[str, str]:
    return {f"owner__{get_user_model().USERNAME_FIELD}": user_id}


def _find_owner(user_id: str) -> AbstractBaseUser:
    try:
        return get_user_model()._default_manager.get_by_natural_key(user_id)
    except get_user_model().DoesNotExist:
        raise core_exceptions.SessionError(f"no user {user_id!r}") from None


def _create(
    app_name: str, user_id: str, state: dict[str, Any], session_id: str | None
) -> core_sessions.Session:
    owner = _find_owner(user_id)
    row = Session(app_name=app_name, owner_id=owner.pk, state=copy.deepcopy(state))
    if session_id is not None:
        if not 0 < len(session_id) <= SESSION_KEY_MAX_LENGTH:
            raise core_exceptions.SessionError(f"invalid session id {session_id!r}")
        row.key = session_id
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        raise core_exceptions.SessionError(f"session {session_id!r} already exists") from None
    return row.to_core()


def _get(app_name: str, user_id: str, session_id: str) -> core_sessions.Session | None:
    row = (
        Session.objects.select_related("owner")
        .filter(key=session_id, app_name=app_name, **_owner_lookup(user_id))
        .first()
    )
    if row is None:
        return None
    return row.to_core(events=_visible_events(row))


def _update(session_key: str, state: dict[str, Any]) -> core_sessions.Session:
    with transaction.atomic():
        found = Session.objects.select_for_update().filter(key=session_key).first()
        if found is None:
            raise core_exceptions.SessionNotFoundError(f"no session {session_key!r}")
        found.state = copy.deepcopy(state)
        found.updated_at = timezone.now()
        found.save(update_fields=["state", "updated_at"])
    return found.to_core(events=_visible_events(found))


def _visible_events(row: Session) -> list[core_events.Event]:
    """The events of ``row`` a reader of the session can see: from its newest
    compaction on (which summarises everything before its cut), or all of them. A long
    session loads in the time of its last compaction's worth of events, not its whole
    history; and, when this process read it before, in the time of the events stored
    since (``session_cache``)."""
    kept = session_cache.CACHE.get(row.pk)
    if kept is not None:
        since = row.events.filter(seq__gte=session_cache.last_seq(kept)).order_by("seq")
        new = session_cache.extension(kept, core_events_of(since))
        if new is not None:
            continued = [*kept, *new]
            if new:
                session_cache.CACHE.put(row.pk, continued)
            return continued
    events = row.events.order_by("seq")
    newest = events.filter(type=core_events.EventType.COMPACTION).order_by("-seq").first()
    covered = (newest.payload.get("actions") or {}).get("compaction") if newest else None
    if covered and covered.get("start_seq") == 1:
        events = events.filter(seq__gt=covered["end_seq"])
    visible = core_events_of(events)
    session_cache.CACHE.put(row.pk, visible)
    return visible


def core_events_of(rows: QuerySet[Event]) -> list[core_events.Event]:
    """The core events of ``rows``, validated from their payloads' JSON text: every run
    reads its session's history this way, and reading the text and validating it as
    JSON skips building a row and a Python dict per event first (a 2,000-event session
    on PostgreSQL: 62 ms, from 190 ms through the rows). Their fields sets are shared
    (``compact_model``: 5.2 -> 1.4 KiB an event), as a process keeps them
    (``session_cache``)."""
    validate = core_events.Event.model_validate_json
    events = [validate(text) for text in payload_texts(rows)]
    for event in events:
        compact_model(event)
    return events


def _delete(session_key: str) -> None:
    Session.objects.filter(key=session_key).delete()


def _list(app_name: str, user_id: str) -> list[core_sessions.Session]:
    rows = Session.objects.select_related("owner").filter(
        app_name=app_name, **_owner_lookup(user_id)
    )
    return [row.to_core() for row in rows.order_by("-created_at")]
