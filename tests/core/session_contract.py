"""The contract every ``BaseSessionService`` implementation must honour.

Subclass ``SessionServiceContract`` in a test module and provide a ``service`` fixture;
the same tests then run against that backend (in-memory here, Django in tests/studio).
"""

from __future__ import annotations

import asyncio

import pytest

from agents_core.events import Event, EventActions, EventType, TextPart
from agents_core.exceptions import SessionError, SessionNotFoundError
from agents_core.sessions.base import BaseSessionService, Session

APP = "contract"


def _event(session: Session, text: str = "hi", **delta: object) -> Event:
    return Event(
        type=EventType.AGENT_MESSAGE,
        invocation_id="inv-1",
        session_id=session.id,
        author="agent",
        branch="agent",
        parts=[TextPart(text=text)],
        actions=EventActions(state_delta=dict(delta)),
    )


class SessionServiceContract:
    """Behaviour shared by every session backend. Needs a ``service`` fixture."""

    async def test_create_then_get_returns_the_same_session(
        self, service: BaseSessionService
    ) -> None:
        created = await service.create_session(app_name=APP, user_id="ada", state={"k": 1})
        found = await service.get_session(app_name=APP, user_id="ada", session_id=created.id)
        assert found is not None
        assert (found.id, found.user_id, found.state, found.events) == (
            created.id,
            "ada",
            {"k": 1},
            [],
        )

    async def test_create_with_a_chosen_id_uses_it_and_refuses_a_duplicate(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada", session_id="chosen-1")
        assert session.id == "chosen-1"
        with pytest.raises(SessionError):
            await service.create_session(app_name=APP, user_id="ada", session_id="chosen-1")

    async def test_get_is_scoped_to_app_and_user(self, service: BaseSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        assert await service.get_session(app_name=APP, user_id="bob", session_id=session.id) is None
        assert (
            await service.get_session(app_name="other", user_id="ada", session_id=session.id)
            is None
        )
        assert await service.get_session(app_name=APP, user_id="ada", session_id="missing") is None

    async def test_append_assigns_contiguous_seq_and_keeps_order(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        stored = [await service.append_event(session, _event(session, f"m{i}")) for i in range(5)]
        assert [e.seq for e in stored] == [1, 2, 3, 4, 5]
        found = await service.get_session(app_name=APP, user_id="ada", session_id=session.id)
        assert found is not None
        assert [e.text for e in found.events] == ["m0", "m1", "m2", "m3", "m4"]
        assert [e.seq for e in found.events] == [1, 2, 3, 4, 5]
        assert [e.id for e in found.events] == [e.id for e in stored]

    async def test_append_mirrors_the_event_onto_the_callers_session(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        stored = await service.append_event(session, _event(session, colour="blue"))
        assert session.events[-1] == stored
        assert session.state == {"colour": "blue"}
        assert session.last_seq == 1

    async def test_state_delta_is_applied_and_none_removes_a_key(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada", state={"a": 1, "b": 2})
        await service.append_event(session, _event(session, b=None, c={"nested": [1, 2]}))
        found = await service.get_session(app_name=APP, user_id="ada", session_id=session.id)
        assert found is not None
        assert found.state == {"a": 1, "c": {"nested": [1, 2]}}

    async def test_partial_events_are_refused(self, service: BaseSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        partial = _event(session).model_copy(update={"partial": True})
        with pytest.raises(SessionError):
            await service.append_event(session, partial)
        found = await service.get_session(app_name=APP, user_id="ada", session_id=session.id)
        assert found is not None
        assert found.events == []

    async def test_stored_events_round_trip_every_field(self, service: BaseSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        original = _event(session, "hello", x=1)
        stored = await service.append_event(session, original)
        found = await service.get_session(app_name=APP, user_id="ada", session_id=session.id)
        assert found is not None
        assert found.events[0].to_wire() == stored.to_wire()
        assert stored.model_copy(update={"seq": None}).to_wire() == original.to_wire()

    async def test_concurrent_appends_never_share_a_seq(self, service: BaseSessionService) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        stored = await asyncio.gather(
            *(service.append_event(session, _event(session)) for _ in range(20))
        )
        assert sorted(e.seq for e in stored if e.seq is not None) == list(range(1, 21))

    async def test_update_replaces_state_and_missing_session_raises(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada", state={"old": True})
        updated = await service.update_session(session.id, state={"new": 1})
        assert updated.state == {"new": 1}
        found = await service.get_session(app_name=APP, user_id="ada", session_id=session.id)
        assert found is not None
        assert found.state == {"new": 1}
        with pytest.raises(SessionNotFoundError):
            await service.update_session("missing", state={})

    async def test_delete_removes_the_session_and_is_idempotent(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada")
        await service.append_event(session, _event(session))
        await service.delete_session(session.id)
        await service.delete_session(session.id)
        assert await service.get_session(app_name=APP, user_id="ada", session_id=session.id) is None

    async def test_list_returns_the_users_sessions_newest_first_without_events(
        self, service: BaseSessionService
    ) -> None:
        first = await service.create_session(app_name=APP, user_id="ada")
        await service.append_event(first, _event(first))
        second = await service.create_session(app_name=APP, user_id="ada")
        await service.create_session(app_name=APP, user_id="bob")
        listed = await service.list_sessions(app_name=APP, user_id="ada")
        assert [s.id for s in listed] == [second.id, first.id]
        assert all(s.events == [] for s in listed)

    async def test_returned_sessions_do_not_alias_the_store(
        self, service: BaseSessionService
    ) -> None:
        session = await service.create_session(app_name=APP, user_id="ada", state={"k": [1]})
        session.state["k"].append(2)
        session.state["injected"] = True
        found = await service.get_session(app_name=APP, user_id="ada", session_id=session.id)
        assert found is not None
        assert found.state == {"k": [1]}

    async def test_a_loaded_session_does_not_see_appends_made_through_another_copy(
        self, service: BaseSessionService
    ) -> None:
        created = await service.create_session(app_name=APP, user_id="ada")
        await service.append_event(created, _event(created, "first"))
        loaded = await service.get_session(app_name=APP, user_id="ada", session_id=created.id)
        assert loaded is not None
        other = await service.append_event(created, _event(created, "by the other copy"))
        assert [e.text for e in loaded.events] == ["first"]
        mine = await service.append_event(loaded, _event(loaded, "by this copy"))
        assert [e.text for e in loaded.events] == ["first", "by this copy"]
        assert loaded.events[-1] == mine and loaded.last_seq == 3
        assert [e.text for e in created.events] == ["first", "by the other copy"]
        assert created.events == [created.events[0], other]
        found = await service.get_session(app_name=APP, user_id="ada", session_id=created.id)
        assert found is not None
        assert [e.seq for e in found.events] == [1, 2, 3]
        assert [e.text for e in found.events[1:]] == ["by the other copy", "by this copy"]
