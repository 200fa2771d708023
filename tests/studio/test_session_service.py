from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from agents_core import events as core_events
from agents_core.event_filters import apply_compaction
from agents_core.exceptions import SessionError
from studio.models import Event, Session
from studio.session_service import DjangoSessionService
from tests.core.session_contract import SessionServiceContract

pytestmark = pytest.mark.django_db(transaction=True)


class TestDjangoSessionService(SessionServiceContract):
    """The shared contract; the contract's user ids name real accounts (by username)."""

    @pytest.fixture
    def service(self, ada: User, bob: User) -> DjangoSessionService:
        return DjangoSessionService()


async def test_creating_a_session_for_an_unknown_user_is_refused_not_an_account() -> None:
    with pytest.raises(SessionError, match="no user"):
        await DjangoSessionService().create_session(app_name="studio", user_id="nobody")
    assert await Session.objects.acount() == 0
    assert not await User.objects.filter(username="nobody").aexists()


async def test_a_studio_session_is_known_to_the_core_by_its_uuid(ada: User) -> None:
    service = DjangoSessionService()
    created = await service.create_session(app_name="studio", user_id="ada")
    row = await Session.objects.aget(key=created.id)
    assert created.id == str(row.id)


async def test_appended_events_are_stored_with_their_queryable_columns(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    event = core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        invocation_id="inv-9",
        session_id=session.id,
        author="user",
        parts=[core_events.TextPart(text="find the moon")],
    )
    stored = await service.append_event(session, event)
    row = await Event.objects.aget(session__key=session.id)
    assert (row.seq, row.type, row.author, row.invocation_id, row.text) == (
        1,
        "user_message",
        "user",
        "inv-9",
        "find the moon",
    )
    assert row.payload == stored.to_wire()
    assert (await Session.objects.aget(key=session.id)).last_seq == 1


async def test_appending_to_a_deleted_session_raises_session_not_found(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    await service.delete_session(session.id)
    event = core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        invocation_id="i",
        session_id=session.id,
        author="user",
    )
    with pytest.raises(SessionError):
        await service.append_event(session, event)


async def test_async_event_commits_store_the_same_events_and_state(
    ada: User, settings: Any
) -> None:
    """``STUDIO_EVENT_COMMIT=async`` changes only when PostgreSQL flushes the commit."""
    settings.STUDIO_EVENT_COMMIT = "async"
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada", state={"a": 1})
    sent = [
        core_events.Event(
            type=core_events.EventType.AGENT_MESSAGE,
            invocation_id="i",
            session_id=session.id,
            author="agent",
            actions=core_events.EventActions(state_delta=delta),
        )
        for delta in ({"b": [2]}, {}, {"a": None, "c": {"d": 3}})
    ]
    stored = [await service.append_event(session, event) for event in sent]
    assert [event.seq for event in stored] == [1, 2, 3]
    row = await Session.objects.aget(key=session.id)
    assert row.state == {"b": [2], "c": {"d": 3}} == session.state
    payloads = [e.payload async for e in Event.objects.filter(session=row).order_by("seq")]
    assert payloads == [event.to_wire() for event in stored]


async def test_appending_an_already_stored_event_returns_it_as_stored(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    event = core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        invocation_id="i",
        session_id=session.id,
        author="user",
        actions=core_events.EventActions(state_delta={"k": 1}),
    )
    first = await service.append_event(session, event)
    again = await service.append_event(session, event)
    assert again == first and again.seq == 1
    assert session.events == [first] and session.state == {"k": 1}
    assert [e.seq async for e in Event.objects.filter(session__key=session.id)] == [1]
    assert (await Session.objects.aget(key=session.id)).last_seq == 1


async def test_a_compacted_session_loads_from_its_newest_compaction_with_the_same_history(
    ada: User,
) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    for n in range(1, 7):
        said = core_events.user_message(session.id, f"message {n}", invocation_id="inv")
        await service.append_event(session, said)
    covered = core_events.CompactionRange(start_seq=1, end_seq=4)
    summary = core_events.Event(
        type=core_events.EventType.COMPACTION,
        invocation_id="inv",
        session_id=session.id,
        author="agent",
        parts=[core_events.TextPart(text="the first four")],
        actions=core_events.EventActions(compaction=covered),
    )
    await service.append_event(session, summary)
    await service.append_event(
        session, core_events.user_message(session.id, "last", invocation_id="inv")
    )

    loaded = await service.get_session(app_name="studio", user_id="ada", session_id=session.id)

    assert loaded is not None
    assert [e.seq for e in loaded.events] == [5, 6, 7, 8]  # nothing the summary covers
    assert loaded.last_seq == 8
    visible = [e.text for e in apply_compaction(loaded.events)]
    assert visible == [e.text for e in apply_compaction(session.events)]
    assert visible == ["the first four", "message 5", "message 6", "last"]
