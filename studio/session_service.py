"""``DjangoSessionService``: ``agents_core`` sessions stored in the ORM.

A core session's ``id`` is ``Session.key`` and its ``user_id`` is the owner's username
(the user model's natural key, ``USERNAME_FIELD``): stable, unique, and what a person
or script naturally names. Sessions are only created for users that exist; an unknown
``user_id`` is a ``SessionError``, never a new account.

``append_event`` allocates the seq, applies the state delta and inserts the event in
one transaction, holding the session row (``select_for_update``), so concurrent appends
never share a seq on PostgreSQL either; SQLite serialises writers itself.
"""

from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.sessions import base as core_sessions
from studio.db import db_sync_to_async
from studio.models import SESSION_KEY_MAX_LENGTH, Event, Session


class DjangoSessionService(core_sessions.BaseSessionService):
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
        stored = await db_sync_to_async(append_event_sync)(session.id, event)
        core_sessions.apply_state_delta(session.state, stored.actions.state_delta)
        session.events.append(stored)
        session.updated_at = stored.created_at
        return stored


def append_event_sync(session_key: str, event: core_events.Event) -> core_events.Event:
    """Store ``event`` in the session keyed ``session_key``; returns it with its seq."""
    with transaction.atomic():
        row = Session.objects.select_for_update().filter(key=session_key).first()
        if row is None:
            raise core_exceptions.SessionNotFoundError(f"no session {session_key!r}")
        stored = event.model_copy(update={"seq": row.last_seq + 1, "session_id": row.key})
        core_sessions.apply_state_delta(row.state, stored.actions.state_delta)
        row.last_seq = stored.seq or 0
        row.updated_at = stored.created_at
        row.save(update_fields=["state", "last_seq", "updated_at"])
        Event.from_core(row, stored).save(force_insert=True)
    return stored


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
    return row.to_core(events=list(row.events.order_by("seq")))


def _update(session_key: str, state: dict[str, Any]) -> core_sessions.Session:
    with transaction.atomic():
        found = Session.objects.select_for_update().filter(key=session_key).first()
        if found is None:
            raise core_exceptions.SessionNotFoundError(f"no session {session_key!r}")
        found.state = copy.deepcopy(state)
        found.updated_at = timezone.now()
        found.save(update_fields=["state", "updated_at"])
    return found.to_core(events=list(found.events.order_by("seq")))


def _delete(session_key: str) -> None:
    Session.objects.filter(key=session_key).delete()


def _list(app_name: str, user_id: str) -> list[core_sessions.Session]:
    rows = Session.objects.select_related("owner").filter(
        app_name=app_name, **_owner_lookup(user_id)
    )
    return [row.to_core() for row in rows.order_by("-created_at")]
