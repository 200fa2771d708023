"""The SQL that stores events: one append (``insert_one``) and a group commit of many
(``insert_batch``), both allocating each event's seq from its session row.

``studio.session_service`` calls these on Django's ORM thread; nothing here awaits.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.sessions import base as core_sessions
from studio import metrics
from studio import sql_columns as cols
from studio.models import Event, Session
from studio.models.approvals import decided_by_policy, record_policy_decisions


def insert_one(session_key: str, event: core_events.Event) -> int:
    """Store ``event`` in the session keyed ``session_key``; returns its seq.

    The session row's ``UPDATE ... SET last_seq = last_seq + 1 ... RETURNING`` allocates
    the seq and holds the row until commit, so concurrent writers queue on it and never
    share a seq or leave a gap; ``state`` is only rewritten when the event carries a
    ``state_delta``. On PostgreSQL that update, the state merge and the event's insert
    are one statement (one round trip, atomic on its own); elsewhere (SQLite) they are
    three statements in one transaction. Joins the caller's transaction if there is one.
    A policy's decision on a call is stored with its audit row, in one transaction
    (``record_policy_decisions``).
    """
    audited = decided_by_policy(event) is not None
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and not audited:
            seq = _append_postgresql(cursor, session_key, event)
        else:
            with transaction.atomic():
                append = (
                    _append_postgresql
                    if connection.vendor == "postgresql"
                    else _append_in_transaction
                )
                seq = append(cursor, session_key, event)
                if seq is not None and audited:
                    record_policy_decisions([(session_key, event)])
    if seq is None:
        raise core_exceptions.SessionNotFoundError(f"no session {session_key!r}")
    metrics.stored(event)
    return seq


def insert_recorded(session: Session, events: Sequence[core_events.Event]) -> None:
    """Store a new, empty session's recorded ``events`` (an imported bundle's) with the
    seqs they carry, in one statement (``_insert_rows``) in the caller's transaction.
    Their usage and cost stay in the payload only: the cost roll-ups' columns are left
    empty, as what another Studio's runs spent was not this owner's. The caller sets
    ``last_seq``."""
    session_pk = cols.db(Session, "id", session.pk)
    adapt = cols.Adapt.of(connection)
    rows = []
    for event in events:
        stored = event.model_copy(update={"session_id": session.key})
        params = _row_values(adapt, stored)
        params[8:11] = [None, None, ""]  # usage, cost, cost_currency
        rows.append([session_pk, event.seq, *params])
    with connection.cursor() as cursor:
        _insert_rows(cursor, rows)


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
    params: list[Any] = [cols.db(Session, "updated_at", event.created_at)]
    params += [removals] if removals else []
    params += [cols.db(Session, "state", sets)] if sets else []
    params += [session_key, *_event_params(session_key, event)]
    cursor.execute(sql, params)
    found = cursor.fetchone()
    return None if found is None else int(found[0])


def _append_in_transaction(cursor: Any, session_key: str, event: core_events.Event) -> int | None:
    delta = event.actions.state_delta
    session, last_seq, updated_at, key, state = cols.names(
        Session, "id", "last_seq", "updated_at", "key", "state"
    )
    table = cols.table(Session)
    returning = f"{session}, {last_seq}" + (f", {state}" if delta else "")
    cursor.execute(
        f"UPDATE {table} SET {last_seq} = {last_seq} + 1, {updated_at} = %s"  # noqa: S608 (names from the model)
        f" WHERE {key} = %s RETURNING {returning}",
        [cols.db(Session, "updated_at", event.created_at), session_key],
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
            [cols.db(Session, "state", merged), session_pk],
        )
    cursor.execute(_insert_sql(), [session_pk, seq, *_event_params(session_key, event, seq)])
    return seq


def _event_params(session_key: str, event: core_events.Event, seq: int | None = None) -> list[Any]:
    """The values of ``_INSERT_COLUMNS`` after session and seq, ready for the database."""
    stored = event.model_copy(update={"seq": seq, "session_id": session_key})
    return _row_values(cols.Adapt.of(connection), stored)


def _row_values(adapt: cols.Adapt, stored: core_events.Event) -> list[Any]:
    """``_event_params`` of ``stored``, the event as stored (``session_id`` and ``seq``
    set: its payload is its ``to_wire()``), adapted as the ORM's fields would but through
    ``sql_columns.Adapt`` (the fields' own machinery cost ~40 us a value on a batch's hot
    path).
    The payload is encoded once, by pydantic (``model_dump_json``, the JSON of
    ``to_wire()``; ``studio/models``' event fields carry no custom encoder)."""
    row_id = event_row_id(str(stored.session_id), stored.id)
    usage, cost = stored.usage, stored.cost
    return [
        adapt.uuid(row_id),
        stored.type.value,
        stored.author,
        stored.branch or "",
        stored.invocation_id,
        stored.text,
        adapt.json(stored.model_dump_json()),
        stored.schema_version,
        None if usage is None else adapt.json(usage.model_dump_json()),
        cols.db(Event, "cost", cost.amount) if cost else None,
        cost.currency if cost else "",
        adapt.datetime(stored.created_at),
    ]


@functools.cache
def _postgresql_append_sql(*, removals: bool, sets: bool, async_commit: bool) -> str:
    """One statement: allocate the seq (and merge the state delta: ``- keys`` removes,
    ``|| object`` sets top-level keys, as ``apply_state_delta`` does), then insert the
    event with that seq written into its payload. Parameters: updated_at, [removed
    keys], [set keys], the session key, then ``_event_params``."""
    session, last_seq, updated_at, key, state = cols.names(
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
        f"WITH allocated AS (UPDATE {cols.table(Session)}"  # noqa: S608 (names from the models)
        f" SET {last_seq} = {last_seq} + 1, {updated_at} = %s{set_state}"
        f" WHERE {key} = %s RETURNING {session} AS session, {last_seq} AS seq{no_flush})"
        f" INSERT INTO {cols.table(Event)} ({', '.join(cols.names(Event, *_INSERT_COLUMNS))})"
        f" SELECT allocated.session, allocated.seq, %s, {values},"
        " jsonb_set(%s::jsonb, '{seq}', to_jsonb(allocated.seq)), %s, %s, %s, %s, %s"
        f" FROM allocated RETURNING {cols.names(Event, 'seq')[0]}"
    )


@functools.cache
def _insert_sql() -> str:
    placeholders = ", ".join(["%s"] * len(_INSERT_COLUMNS))
    return f"INSERT INTO {_event_columns()} VALUES ({placeholders})"  # noqa: S608


@functools.cache
def _copy_sql() -> str:
    return f"COPY {_event_columns()} FROM STDIN"


def _event_columns() -> str:  # the table and ``_INSERT_COLUMNS``, for INSERT and COPY
    return f"{cols.table(Event)} ({', '.join(cols.names(Event, *_INSERT_COLUMNS))})"


def _insert_rows(cursor: Any, rows: Sequence[Sequence[Any]]) -> None:
    """Insert event ``rows`` (values of ``_INSERT_COLUMNS``) in the cursor's transaction:
    on PostgreSQL one ``COPY ... FROM STDIN``, whose rows skip the parse, plan and
    client-side quoting an ``executemany`` of ``INSERT`` pays for each (~1.7x faster at
    49 rows: bench/README.md, "Write path: COPY"). Constraints and triggers apply as to
    an ``INSERT``: a refused row fails the statement. Elsewhere one ``executemany``."""
    if connection.vendor != "postgresql":
        cursor.executemany(_insert_sql(), rows)
        return
    with connection.wrap_database_errors, cursor.cursor.copy(_copy_sql()) as copy:
        for row in rows:
            copy.write_row(row)


def _async_commit() -> bool:
    return getattr(settings, "STUDIO_EVENT_COMMIT", "durable") == "async"


# Group commit


Stored = core_events.Event | core_exceptions.SessionNotFoundError
"""What ``insert_batch`` answers for one event: the event as stored, or why not."""


def insert_batch(items: Sequence[tuple[str, core_events.Event]]) -> list[Stored]:
    """Store ``items`` (session key, event), in order, in one transaction: one
    ``UPDATE ... FROM (VALUES ...)`` allocates every session's seqs at once
    (``last_seq + n``, holding each session row until the commit, as ``insert_one``
    does), the state deltas are merged in order, and one statement inserts the events
    (``_insert_rows``), with the audit rows of the policy decisions among them
    (``record_policy_decisions``). Events of a session that does not exist are answered
    with ``SessionNotFoundError`` and not stored. Any database error rolls the whole batch
    back and propagates (``studio.group_commit`` then tries each event alone)."""
    groups: dict[str, list[int]] = {}
    for index, (key, _event) in enumerate(items):
        groups.setdefault(key, []).append(index)
    answers: list[core_events.Event | None] = [None] * len(items)
    with transaction.atomic(), _unlogged_cursor() as cursor:
        if connection.vendor == "postgresql" and _async_commit():
            cursor.execute("SET LOCAL synchronous_commit = off")
        rows: list[list[Any]] = []
        states: list[list[Any]] = []
        adapt = cols.Adapt.of(connection)
        for key, pk, last_seq, state in _allocate(cursor, adapt, items, groups):
            indexes = groups[key]
            changed = any(items[index][1].actions.state_delta for index in indexes)
            merged = _state(state) if changed else None
            for offset, index in enumerate(indexes):
                event, seq = items[index][1], last_seq - len(indexes) + 1 + offset
                if merged is not None:
                    core_sessions.apply_state_delta(merged, event.actions.state_delta)
                stored = event.model_copy(update={"seq": seq, "session_id": key})
                rows.append([pk, seq, *_row_values(adapt, stored)])
                answers[index] = stored
            if merged is not None:
                states.append([cols.db(Session, "state", merged), pk])
        if states:
            cursor.executemany(_state_sql(), states)
        _insert_rows(cursor, rows)
        record_policy_decisions(
            (key, event) for key, event in items if decided_by_policy(event) is not None
        )
    done = [answer for answer in answers if answer is not None]
    metrics.stored_many(done)
    if len(done) == len(items):
        return [*done]
    return [
        core_exceptions.SessionNotFoundError(f"no session {key!r}") if answer is None else answer
        for (key, _event), answer in zip(items, answers, strict=True)
    ]


def _unlogged_cursor() -> Any:
    """``connection.cursor()`` without ``DEBUG``'s query log (a test capturing queries
    still gets it): on SQLite, logging a statement runs a second query that quotes each
    of its parameters, ~30 us an event of a batch on the embedded default (``DEBUG``
    is on unless ``STUDIO_DEBUG=0``). Errors are Django's, as from any cursor."""
    if connection.force_debug_cursor:
        return connection.cursor()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection.make_cursor(connection.create_cursor())


def _allocate(
    cursor: Any,
    adapt: cols.Adapt,
    items: Sequence[tuple[str, core_events.Event]],
    groups: dict[str, list[int]],
) -> list[tuple[str, Any, int, Any]]:
    """Allocate ``len(indexes)`` seqs in each session of ``groups``: rows of (key,
    session pk, its new last seq, its state if an event of the batch has a delta)."""
    params: list[Any] = []
    for key, indexes in groups.items():
        newest = items[indexes[-1]][1].created_at
        params += [key, len(indexes), adapt.datetime(newest)]
    with_state = any(event.actions.state_delta for _key, event in items)
    cursor.execute(_allocate_sql(len(groups), connection.vendor, with_state=with_state), params)
    return [(row[0], row[1], int(row[2]), row[3]) for row in cursor.fetchall()]


def _state(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


@functools.lru_cache(maxsize=64)
def _allocate_sql(sessions: int, vendor: str, *, with_state: bool) -> str:
    """Parameters: (key, count, updated_at) for each of ``sessions``. ``VALUES``
    columns are ``column1``.. on both PostgreSQL and SQLite; PostgreSQL is told their
    types. (SQLite's ``RETURNING`` may not name ``v``.)"""
    session, last_seq, updated_at, key, state = cols.names(
        Session, "id", "last_seq", "updated_at", "key", "state"
    )
    table = cols.table(Session)
    typed = "(%s, %s::integer, %s::timestamptz)"
    row = typed if vendor == "postgresql" else "(%s, %s, %s)"
    values = ", ".join([row] * sessions)
    return (
        f"UPDATE {table} SET {last_seq} = {table}.{last_seq} + v.column2,"  # noqa: S608 (names from the model)
        f" {updated_at} = v.column3 FROM (VALUES {values}) AS v"
        f" WHERE {table}.{key} = v.column1"
        f" RETURNING {table}.{key}, {table}.{session}, {table}.{last_seq},"
        f" {f'{table}.{state}' if with_state else 'NULL'}"
    )


@functools.cache
def _state_sql() -> str:
    session, state = cols.names(Session, "id", "state")
    return f"UPDATE {cols.table(Session)} SET {state} = %s WHERE {session} = %s"  # noqa: S608
