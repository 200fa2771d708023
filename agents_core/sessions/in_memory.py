"""Sessions kept in process memory: for tests, demos and single-process scripts."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from agents_core.contracts import replaced
from agents_core.events import Event
from agents_core.exceptions import SessionError, SessionNotFoundError
from agents_core.sessions.base import (
    BaseSessionService,
    EventLog,
    Session,
    apply_state_delta,
    touch,
)


class InMemorySessionService(BaseSessionService):
    """Callers never share mutable state with the store: state is copied deeply; the
    events (frozen) are shared, and a loaded session's list of them is an ``EventLog``
    over the store's, so loading a long session copies nothing per event."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = asyncio.Lock()

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        async with self._lock:
            if session_id is not None and session_id in self._sessions:
                raise SessionError(f"session {session_id!r} already exists")
            fields: dict[str, Any] = {"app_name": app_name, "user_id": user_id}
            if session_id is not None:
                fields["id"] = session_id
            session = Session(**fields, state=copy.deepcopy(state or {}))
            self._sessions[session.id] = session
            return _copy(session)

    async def get_session(self, *, app_name: str, user_id: str, session_id: str) -> Session | None:
        stored = self._sessions.get(session_id)
        if stored is None or stored.app_name != app_name or stored.user_id != user_id:
            return None
        return _copy(stored)

    async def update_session(self, session_id: str, *, state: dict[str, Any]) -> Session:
        async with self._lock:
            stored = self._require(session_id)
            stored.state = copy.deepcopy(state)
            touch(stored)
            return _copy(stored)

    async def delete_session(self, session_id: str) -> None:
        async with self._lock:
            self._sessions.pop(session_id, None)

    async def list_sessions(self, *, app_name: str, user_id: str) -> list[Session]:
        found = [
            _copy(s, with_events=False)
            for s in self._sessions.values()
            if s.app_name == app_name and s.user_id == user_id
        ]
        return sorted(found, key=lambda s: s.created_at, reverse=True)

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            raise SessionError("partial events are never stored")
        async with self._lock:
            stored = self._require(session.id)
            event = replaced(event, seq=stored.last_seq + 1, session_id=stored.id)
            apply_state_delta(stored.state, event.actions.state_delta)
            stored_events(stored).append(event)
            touch(stored, event.created_at)
        apply_state_delta(session.state, event.actions.state_delta)
        session.add_stored(event)
        session.updated_at = stored.updated_at
        return event

    def _require(self, session_id: str) -> Session:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise SessionNotFoundError(f"no session {session_id!r}") from None


def stored_events(stored: Session) -> list[Event]:
    """The store's own list of a session's events, which it only ever appends to."""
    if not isinstance(stored.events, list):
        raise TypeError("a stored session keeps its events in a list")
    return stored.events


def _copy(session: Session, *, with_events: bool = True) -> Session:
    """A copy that shares nothing mutable with the stored ``session``: its events are
    an ``EventLog`` over the store's list (events are frozen)."""
    events = EventLog(stored_events(session)) if with_events else []
    return session.model_copy(update={"state": copy.deepcopy(session.state), "events": events})
