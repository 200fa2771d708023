"""``studio.session_cache``: a session read again is read from the last event kept on,
gives what a cold read gives, and is read whole when what was kept no longer holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core import events as core_events
from agents_core.sessions.base import Session as CoreSession
from studio import session_cache
from studio.models import Event, Session
from studio.session_cache import SessionCache
from studio.session_service import DjangoSessionService

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _cold() -> Iterator[None]:
    session_cache.CACHE.clear()
    yield
    session_cache.CACHE.clear()


async def _said(service: DjangoSessionService, session: CoreSession, *texts: str) -> None:
    for text in texts:
        said = core_events.user_message(session.id, text, invocation_id="inv")
        await service.append_event(session, said)


async def _read(service: DjangoSessionService, session: CoreSession) -> list[core_events.Event]:
    loaded = await service.get_session(app_name="studio", user_id="ada", session_id=session.id)
    assert loaded is not None
    return list(loaded.events)


async def _cold_read(
    service: DjangoSessionService, session: CoreSession
) -> list[core_events.Event]:
    session_cache.CACHE.clear()
    return await _read(service, session)


@sync_to_async
def _rewrite_stored_text(session: CoreSession, seq: int, text: str) -> None:
    """Change a stored event behind the service's back (nothing in Studio does): shows
    which rows a read reads."""
    row = Event.objects.get(session__key=session.id, seq=seq)
    row.payload["parts"][0]["text"] = text
    row.save(update_fields=["payload"])


async def test_a_session_read_again_reads_only_from_the_last_event_kept(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    await _said(service, session, "one", "two", "three")
    assert [e.text for e in await _read(service, session)] == ["one", "two", "three"]

    await _rewrite_stored_text(session, 1, "rewritten")
    await _said(service, session, "four", "five")
    warm = await _read(service, session)

    assert [e.text for e in warm] == ["one", "two", "three", "four", "five"]  # 1 not re-read
    assert [e.seq for e in warm] == [1, 2, 3, 4, 5]
    cold = await _cold_read(service, session)
    assert [e.text for e in cold] == ["rewritten", "two", "three", "four", "five"]


async def test_a_warm_read_gives_what_a_cold_read_gives(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    await _said(service, session, "one")
    for round_ in range(3):
        await _read(service, session)
        await _said(service, session, f"more {round_}", f"again {round_}")
        warm = await _read(service, session)
        assert warm == await _cold_read(service, session)
        await _read(service, session)  # warm again for the next round
    assert len(warm) == 7


async def test_a_new_compaction_makes_the_session_read_whole_again(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    await _said(service, session, "1", "2", "3", "4")
    await _read(service, session)
    summary = core_events.Event(
        type=core_events.EventType.COMPACTION,
        invocation_id="inv",
        session_id=session.id,
        author="agent",
        parts=[core_events.TextPart(text="the first three")],
        actions=core_events.EventActions(
            compaction=core_events.CompactionRange(start_seq=1, end_seq=3)
        ),
    )
    await service.append_event(session, summary)
    await _said(service, session, "6")

    warm = await _read(service, session)

    assert [e.seq for e in warm] == [4, 5, 6]  # from the newest compaction's cut on
    assert warm == await _cold_read(service, session)


async def test_events_that_no_longer_continue_what_was_kept_are_read_whole(ada: User) -> None:
    service = DjangoSessionService()
    session = await service.create_session(app_name="studio", user_id="ada")
    await _said(service, session, "one", "two")
    await _read(service, session)
    # The stored events replaced by others under the same seqs (not something Studio
    # does; what the kept events' last id guards against).
    await Event.objects.filter(session__key=session.id).adelete()
    await Session.objects.filter(key=session.id).aupdate(last_seq=0)
    fresh = await service.get_session(app_name="studio", user_id="ada", session_id=session.id)
    assert fresh is not None
    await _said(service, fresh, "uno", "dos", "tres")

    warm = await _read(service, session)

    assert [e.text for e in warm] == ["uno", "dos", "tres"]
    assert warm == await _cold_read(service, session)


def test_the_cache_keeps_at_most_its_events_dropping_the_least_recently_read() -> None:
    cache = SessionCache(max_events=5)
    a, b, c = (Session().pk for _ in range(3))
    events = [
        core_events.user_message("s", str(n), invocation_id="i").model_copy(update={"seq": n})
        for n in range(1, 7)
    ]
    cache.put(a, events[:2])
    cache.put(b, events[:2])
    assert cache.get(a) is not None  # read lately: b is now the least recently read
    cache.put(c, events[:2])
    assert cache.get(b) is None and cache.get(a) is not None and cache.get(c) is not None
    assert cache.events_kept == 4
    cache.put(a, events)  # grown past the whole bound: not kept at all
    assert cache.get(a) is None and cache.events_kept == 2
    cache.put(c, events[:3])
    assert cache.events_kept == 3
