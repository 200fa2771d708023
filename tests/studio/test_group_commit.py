"""Group commit (``studio.group_commit``) on a real database (SQLite here, PostgreSQL in
the PostgreSQL pass): appends made together are committed in batches and keep every
promise of one append; a failure fails only the appends it concerns."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import DatabaseError, connection

from agents_core import events as core_events
from agents_core.exceptions import SessionNotFoundError
from agents_core.sessions.base import Session as CoreSession
from studio import group_commit
from studio.models import Event, Session
from studio.session_service import DjangoSessionService

pytestmark = pytest.mark.django_db(transaction=True)


def _event(session: CoreSession, text: str, delta: dict[str, Any] | None = None) -> Any:
    return core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="group",
        session_id=session.id,
        author="agent",
        parts=[core_events.TextPart(text=text)],
        actions=core_events.EventActions(state_delta=delta or {}),
    )


async def _sessions(service: DjangoSessionService, count: int) -> list[CoreSession]:
    return [await service.create_session(app_name="studio", user_id="ada") for _ in range(count)]


async def _stored(session: CoreSession) -> list[tuple[int, str]]:
    rows = Event.objects.filter(session__key=session.id).order_by("seq")
    return [(row.seq, row.text) async for row in rows]


async def _batches() -> int:
    writer = group_commit.running_writer()
    return 0 if writer is None else writer.batches


async def test_concurrent_runs_share_commits_with_gapless_seqs_and_merged_state(ada: User) -> None:
    service = DjangoSessionService()
    sessions = await _sessions(service, 12)
    before = await _batches()

    async def run(session: CoreSession) -> list[core_events.Event]:
        return [
            await service.append_event(session, _event(session, f"e{n}", {f"k{n % 3}": n}))
            for n in range(8)
        ]

    results = await asyncio.gather(*(run(session) for session in sessions))
    assert await _batches() > before  # appends made together were committed together
    for session, stored in zip(sessions, results, strict=True):
        assert [event.seq for event in stored] == list(range(1, 9))
        assert await _stored(session) == [(n + 1, f"e{n}") for n in range(8)]
        row = await Session.objects.aget(key=session.id)
        assert row.last_seq == 8
        assert row.state == {"k0": 6, "k1": 7, "k2": 5} == session.state
        payloads = [e.payload async for e in Event.objects.filter(session=row).order_by("seq")]
        assert payloads == [event.to_wire() for event in stored]


async def test_appends_to_one_session_without_waiting_are_stored_in_order(ada: User) -> None:
    service = DjangoSessionService()
    (session,) = await _sessions(service, 1)
    sent = [_event(session, f"e{n}", {"last": n}) for n in range(30)]
    stored = await asyncio.gather(*(service.append_event(session, event) for event in sent))
    assert [event.seq for event in stored] == list(range(1, 31))
    assert await _stored(session) == [(n + 1, f"e{n}") for n in range(30)]
    assert (await Session.objects.aget(key=session.id)).state == {"last": 29}


async def test_a_batch_stores_text_that_a_copy_format_must_escape_exactly(ada: User) -> None:
    """On PostgreSQL a batch's rows go through ``COPY`` (tab-separated text, ``\\N`` for
    NULL, backslash escapes): every such character comes back as written, in the text
    column, the payload and the state."""
    service = DjangoSessionService()
    sessions = await _sessions(service, 3)
    texts = ["a\tb\nc", "back\\slash \\N", "\\.", "quote ' \" ; --", "naïve ☃ \r end", "", "\\x00"]
    appends = [
        service.append_event(session, _event(session, text, {"last": text}))
        for text in texts
        for session in sessions
    ]
    stored = await asyncio.gather(*appends)
    assert await _batches() > 0
    for session in sessions:
        assert await _stored(session) == list(enumerate(texts, start=1))
        row = await Session.objects.aget(key=session.id)
        assert row.state == {"last": texts[-1]}
        mine = [event for event in stored if event.session_id == session.id]
        payloads = [e.payload async for e in Event.objects.filter(session=row).order_by("seq")]
        assert payloads == [event.to_wire() for event in mine]


async def test_a_deleted_session_fails_only_its_own_appends_in_a_batch(ada: User) -> None:
    service = DjangoSessionService()
    kept, deleted, other = await _sessions(service, 3)
    await service.delete_session(deleted.id)
    appends = [
        service.append_event(session, _event(session, f"{name}{n}"))
        for n in range(3)
        for name, session in (("k", kept), ("d", deleted), ("o", other))
    ]
    results = await asyncio.gather(*appends, return_exceptions=True)
    failed = [result for result in results if isinstance(result, BaseException)]
    assert len(failed) == 3 and all(isinstance(e, SessionNotFoundError) for e in failed)
    assert await _stored(kept) == [(1, "k0"), (2, "k1"), (3, "k2")]
    assert await _stored(other) == [(1, "o0"), (2, "o1"), (3, "o2")]


@sync_to_async
def _poison_trigger() -> None:
    """A real database error for one event: inserting the text ``poison`` is refused."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "CREATE FUNCTION refuse_poison() RETURNS trigger AS $$ BEGIN"
                " IF NEW.text = 'poison' THEN RAISE EXCEPTION 'poison refused'; END IF;"
                " RETURN NEW; END $$ LANGUAGE plpgsql"
            )
            cursor.execute(
                "CREATE TRIGGER refuse_poison BEFORE INSERT ON studio_event"
                " FOR EACH ROW EXECUTE FUNCTION refuse_poison()"
            )
        else:
            cursor.execute(
                "CREATE TRIGGER refuse_poison BEFORE INSERT ON studio_event"
                " WHEN NEW.text = 'poison' BEGIN SELECT RAISE(ABORT, 'poison refused'); END"
            )


async def test_a_failing_event_fails_only_its_append_and_a_repeat_is_not_stored_twice(
    ada: User,
) -> None:
    service = DjangoSessionService()
    first, second = await _sessions(service, 2)
    repeated = await service.append_event(first, _event(first, "once"))
    await _poison_trigger()
    appends = [
        service.append_event(second, _event(second, "a")),
        service.append_event(first, _event(first, "b")),
        service.append_event(second, _event(second, "poison")),
        service.append_event(first, repeated),
        service.append_event(second, _event(second, "c")),
    ]
    results = await asyncio.gather(*appends, return_exceptions=True)
    assert isinstance(results[2], DatabaseError)
    assert results[3] == repeated  # the stored copy, not a second row
    assert await _stored(first) == [(1, "once"), (2, "b")]
    assert await _stored(second) == [(1, "a"), (2, "c")]  # no gap where poison was
    assert (await Session.objects.aget(key=second.id)).last_seq == 2


async def test_cancelled_appenders_leave_the_rest_of_the_batch_stored_gapless(ada: User) -> None:
    service = DjangoSessionService()
    (session,) = await _sessions(service, 1)
    tasks = [
        asyncio.create_task(service.append_event(session, _event(session, f"e{n}")))
        for n in range(10)
    ]
    await asyncio.sleep(0)  # every append is queued; the writer has not taken them yet
    tasks[4].cancel()  # before its batch is taken: dropped
    await asyncio.sleep(0.001)
    tasks[7].cancel()  # perhaps while its batch is written: stored or not, never a gap
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert isinstance(results[4], asyncio.CancelledError)
    stored = await _stored(session)
    texts = [text for _seq, text in stored]
    assert "e4" not in texts
    assert [seq for seq, _text in stored] == list(range(1, len(stored) + 1))
    assert {f"e{n}" for n in range(10) if n not in (4, 7)} <= set(texts)
    assert (await Session.objects.aget(key=session.id)).last_seq == len(stored)
