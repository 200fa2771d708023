"""``DjangoSessionService``: ``agents_core`` sessions stored in the ORM.

A core session's ``id`` is ``Session.key`` and its ``user_id`` is the owner's username
(the user model's natural key, ``USERNAME_FIELD``): stable, unique, and what a person
or script naturally names. Sessions are only created for users that exist; an unknown
``user_id`` is a ``SessionError``, never a new account.

``append_event`` is the hot path (every event a run stores): see ``append_event_sync``
for how one append allocates its seq, and ``_append_retrying`` for how it survives a
dropped connection without storing an event twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import json
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from django.conf import settings
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
from django.db.models import Field, Model
from django.utils import timezone

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.sessions import base as core_sessions
from studio import costs, metrics
from studio.db import db_sync_to_async
from studio.models import SESSION_KEY_MAX_LENGTH, Event, Session

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
        stored = await _append_retrying(
            session.id, costs.priced(event, self._prices, self._summary_price, self._model_prices)
        )
        if session.events and session.events[-1].id == stored.id:
            return stored  # appended again: this session mirrors it already
        core_sessions.apply_state_delta(session.state, stored.actions.state_delta)
        session.add_stored(stored)
        session.updated_at = stored.created_at
        return stored


async def _append_retrying(session_key: str, event: core_events.Event) -> core_events.Event:
    """``append_event_sync`` on the ORM thread, tried again after a connection error
    (a restarted server, a dropped socket, a terminated backend) after each pause in
    ``RETRY_DELAYS_S``; the last error propagates.

    Idempotent: a connection can drop after the server committed but before the reply
    arrived, so every retry first looks the event up by its id (``stored_event``) and
    returns the stored one if the lost commit landed. Stale connections are not checked
    before each try (no ``SELECT 1`` per event): a dead one fails the try and is
    replaced.
    """
    retry = False
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


def append_event_sync(session_key: str, event: core_events.Event) -> core_events.Event:
    """Store ``event`` in the session keyed ``session_key``; returns it with its seq.

    The session row's ``UPDATE ... SET last_seq = last_seq + 1 ... RETURNING`` allocates
    the seq and holds the row until commit, so concurrent writers queue on it and never
    share a seq or leave a gap; ``state`` is only rewritten when the event carries a
    ``state_delta``. On PostgreSQL that update, the state merge and the event's insert
    are one statement (one round trip, atomic on its own); elsewhere (SQLite) they are
    three statements in one transaction. Joins the caller's transaction if there is one.
    """
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            seq = _append_postgresql(cursor, session_key, event)
        else:
            with transaction.atomic():
                seq = _append_in_transaction(cursor, session_key, event)
    if seq is None:
        raise core_exceptions.SessionNotFoundError(f"no session {session_key!r}")
    metrics.stored(event)
    return event.model_copy(update={"seq": seq, "session_id": session_key})


def stored_event(session_key: str, event_id: str) -> core_events.Event | None:
    """The event with this id, if it is stored in the session keyed ``session_key``."""
    rows = Event.objects.filter(pk=event_row_id(session_key, event_id))
    payload = rows.values_list("payload", flat=True).first()
    return None if payload is None else core_events.Event.model_validate(payload)


def event_row_id(session_key: str, event_id: str) -> uuid.UUID:
    """The primary key of the row storing event ``event_id`` of a session. Derived from
    both, so the same event can never be stored twice in a session (a key conflict),
    and a retry finds the row its lost commit stored."""
    return uuid.uuid5(_EVENT_ROW_NAMESPACE, f"{session_key}\n{event_id}")


_EVENT_ROW_NAMESPACE = uuid.UUID("6f1e2c47-52a4-4c55-9b3e-3f0c1d8a9e21")
_INSERT_COLUMNS = (
    "session",
    "seq",
    "id",
    "type",
    "author",
    "branch",
    "invocation_id",
    "text",
    "payload",
    "schema_version",
    "usage",
    "cost",
    "cost_currency",
    "created_at",
)


def _append_postgresql(cursor: Any, session_key: str, event: core_events.Event) -> int | None:
    delta = event.actions.state_delta
    sets = {key: value for key, value in delta.items() if value is not None}
    removals = [key for key, value in delta.items() if value is None]
    sql = _postgresql_append_sql(
        removals=bool(removals), sets=bool(sets), async_commit=_async_commit()
    )
    params: list[Any] = [_db(Session, "updated_at", event.created_at)]
    params += [removals] if removals else []
    params += [_db(Session, "state", sets)] if sets else []
    params += [session_key, *_event_params(session_key, event)]
    cursor.execute(sql, params)
    found = cursor.fetchone()
    return None if found is None else int(found[0])


def _append_in_transaction(cursor: Any, session_key: str, event: core_events.Event) -> int | None:
    delta = event.actions.state_delta
    session, last_seq, updated_at, key, state = _names(
        Session, "id", "last_seq", "updated_at", "key", "state"
    )
    table = _table(Session)
    returning = f"{session}, {last_seq}" + (f", {state}" if delta else "")
    cursor.execute(
        f"UPDATE {table} SET {last_seq} = {last_seq} + 1, {updated_at} = %s"  # noqa: S608 (names from the model)
        f" WHERE {key} = %s RETURNING {returning}",
        [_db(Session, "updated_at", event.created_at), session_key],
    )
    found = cursor.fetchone()
    if found is None:
        return None
    session_pk, seq = found[0], int(found[1])
    if delta:
        merged = json.loads(found[2]) if isinstance(found[2], str) else dict(found[2])
        core_sessions.apply_state_delta(merged, delta)
        cursor.execute(
            f"UPDATE {table} SET {state} = %s WHERE {session} = %s",  # noqa: S608
            [_db(Session, "state", merged), session_pk],
        )
    cursor.execute(_insert_sql(), [session_pk, seq, *_event_params(session_key, event, seq)])
    return seq


def _event_params(session_key: str, event: core_events.Event, seq: int | None = None) -> list[Any]:
    """The values of ``_INSERT_COLUMNS`` after session and seq, ready for the database."""
    payload = event.to_wire()
    payload.update(session_id=session_key, seq=seq)  # as the stored copy's to_wire()
    return [
        _db(Event, "id", event_row_id(session_key, event.id)),
        event.type.value,
        event.author,
        event.branch or "",
        event.invocation_id,
        event.text,
        _db(Event, "payload", payload),
        event.schema_version,
        _db(Event, "usage", event.usage.model_dump(mode="json") if event.usage else None),
        _db(Event, "cost", event.cost.amount if event.cost else None),
        event.cost.currency if event.cost else "",
        _db(Event, "created_at", event.created_at),
    ]


@functools.cache
def _postgresql_append_sql(*, removals: bool, sets: bool, async_commit: bool) -> str:
    """One statement: allocate the seq (and merge the state delta: ``- keys`` removes,
    ``|| object`` sets top-level keys, as ``apply_state_delta`` does), then insert the
    event with that seq written into its payload. Parameters: updated_at, [removed
    keys], [set keys], the session key, then ``_event_params``."""
    session, last_seq, updated_at, key, state = _names(
        Session, "id", "last_seq", "updated_at", "key", "state"
    )
    merged = state
    if removals:
        merged = f"({merged} - %s::text[])"
    if sets:
        merged = f"({merged} || %s::jsonb)"
    set_state = f", {state} = {merged}" if merged != state else ""
    # STUDIO_EVENT_COMMIT=async: this transaction's commit does not wait for the WAL
    # flush (studio/settings.py says what that risks).
    no_flush = ", set_config('synchronous_commit', 'off', true)" if async_commit else ""
    values = ", ".join(["%s"] * 5)
    return (
        f"WITH allocated AS (UPDATE {_table(Session)}"  # noqa: S608 (names from the models)
        f" SET {last_seq} = {last_seq} + 1, {updated_at} = %s{set_state}"
        f" WHERE {key} = %s RETURNING {session} AS session, {last_seq} AS seq{no_flush})"
        f" INSERT INTO {_table(Event)} ({', '.join(_names(Event, *_INSERT_COLUMNS))})"
        f" SELECT allocated.session, allocated.seq, %s, {values},"
        " jsonb_set(%s::jsonb, '{seq}', to_jsonb(allocated.seq)), %s, %s, %s, %s, %s"
        f" FROM allocated RETURNING {_names(Event, 'seq')[0]}"
    )


@functools.cache
def _insert_sql() -> str:
    columns = _names(Event, *_INSERT_COLUMNS)
    placeholders = ", ".join(["%s"] * len(columns))
    return f"INSERT INTO {_table(Event)} ({', '.join(columns)}) VALUES ({placeholders})"  # noqa: S608


def _async_commit() -> bool:
    return getattr(settings, "STUDIO_EVENT_COMMIT", "durable") == "async"


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _names(model: type[Model], *fields: str) -> list[str]:
    """The quoted column names of ``fields`` (SQL built here names nothing else)."""
    return [connection.ops.quote_name(_column(model, name)) for name in fields]


def _db(model: type[Model], field: str, value: Any) -> Any:
    """``value`` as ``field`` hands it to the database driver."""
    return _field(model, field).get_db_prep_save(value, connection)


@functools.cache
def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, Field):
        raise TypeError(f"{model.__name__}.{name} is not a concrete field")
    return field


def _column(model: type[Model], name: str) -> str:
    column = _field(model, name).column
    if column is None:
        raise TypeError(f"{model.__name__}.{name} has no column")
    return column


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


def _visible_events(row: Session) -> list[Event]:
    """The events of ``row`` a reader of the session can see: from its newest
    compaction on (which summarises everything before its cut), or all of them. A long
    session loads in the time of its last compaction's worth of events, not its whole
    history."""
    events = row.events.order_by("seq")
    newest = events.filter(type=core_events.EventType.COMPACTION).order_by("-seq").first()
    covered = (newest.payload.get("actions") or {}).get("compaction") if newest else None
    if covered and covered.get("start_seq") == 1:
        events = events.filter(seq__gt=covered["end_seq"])
    return list(events)


def _delete(session_key: str) -> None:
    Session.objects.filter(key=session_key).delete()


def _list(app_name: str, user_id: str) -> list[core_sessions.Session]:
    rows = Session.objects.select_related("owner").filter(
        app_name=app_name, **_owner_lookup(user_id)
    )
    return [row.to_core() for row in rows.order_by("-created_at")]
