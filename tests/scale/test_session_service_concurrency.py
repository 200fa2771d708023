"""Seq allocation on PostgreSQL under concurrent writers: ``append_event_sync`` holds the
session row, so appends from many threads (each its own connection) never share a seq
and never leave a gap."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, connections

from agents_core import events as core_events
from studio.models import Event, Session
from studio.session_service import append_event_sync

WRITERS = 8
APPENDS = 25

pytestmark = pytest.mark.django_db(transaction=True)


def _message(session_key: str, writer: int, n: int) -> core_events.Event:
    return core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        invocation_id=f"writer-{writer}",
        session_id=session_key,
        author="user",
        parts=[core_events.TextPart(text=f"{writer}:{n}")],
        actions=core_events.EventActions(state_delta={f"writer_{writer}": n}),
    )


def test_concurrent_appends_from_many_connections_get_distinct_gapless_seqs() -> None:
    assert connection.vendor == "postgresql"
    owner = get_user_model().objects.create_user("writer")
    session = Session.objects.create(owner=owner)
    start = threading.Barrier(WRITERS)

    def write(writer: int) -> list[int]:
        start.wait(timeout=30)  # every writer holds a connection before any appends
        try:
            return [
                append_event_sync(session.key, _message(session.key, writer, n)).seq or 0
                for n in range(APPENDS)
            ]
        finally:
            connections.close_all()

    with ThreadPoolExecutor(WRITERS) as pool:
        per_writer = list(pool.map(write, range(WRITERS)))

    total = WRITERS * APPENDS
    assert sorted(seq for seqs in per_writer for seq in seqs) == list(range(1, total + 1))
    assert all(seqs == sorted(seqs) for seqs in per_writer)
    session.refresh_from_db()
    assert session.last_seq == total
    assert session.state == {f"writer_{w}": APPENDS - 1 for w in range(WRITERS)}
    stored = list(Event.objects.filter(session=session).order_by("seq").values_list("seq"))
    assert [seq for (seq,) in stored] == list(range(1, total + 1))
