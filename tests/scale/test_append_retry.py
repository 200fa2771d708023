"""``DjangoSessionService.append_event`` survives a dropped connection on PostgreSQL:
the writer's backend is terminated (``pg_terminate_backend``) between and during
appends, and a commit's reply is lost on the wire after the server committed. Every
event is stored exactly once, with gapless seqs, and the state holds every delta."""

from __future__ import annotations

import random
import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.db import connection

from agents_core import events as core_events
from agents_core.sessions.base import Session as CoreSession
from studio.models import Event, Session
from studio.session_service import DjangoSessionService

pytestmark = pytest.mark.django_db(transaction=True)

WRITER_QUERY = "%studio_event%"
"""How the killer finds the writer's backend: its last statement touched the events."""


@pytest.fixture(autouse=True)
async def _close_orm_connection_after() -> Any:
    """The ORM thread keeps its connection (``CONN_MAX_AGE``); close it so the test
    database can be dropped."""
    yield
    await _close_orm_connection()


def _message(session: CoreSession, n: int) -> core_events.Event:
    return core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="retry",
        session_id=session.id,
        author="agent",
        parts=[core_events.TextPart(text=f"m{n}")],
        actions=core_events.EventActions(state_delta={"n": n} if n % 2 else {}),
    )


def _admin() -> psycopg.Connection[Any]:
    """A connection of the test's own, to the test database, for terminating others."""
    settings = connection.settings_dict
    return psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        host=settings["HOST"] or "127.0.0.1",
        port=int(settings["PORT"] or 5432),
        autocommit=True,
    )


def _terminate_writer(admin: psycopg.Connection[Any]) -> int:
    """Terminate every backend whose last statement touched the events; how many."""
    rows = admin.execute(
        "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE %s",
        [WRITER_QUERY],
    ).fetchall()
    return sum(1 for (terminated,) in rows if terminated)


async def _new_session() -> CoreSession:
    await sync_to_async(get_user_model().objects.create_user)("writer")
    return await DjangoSessionService().create_session(app_name="retry", user_id="writer")


async def _assert_stored_once(
    session: CoreSession, sent: list[core_events.Event], returned: list[core_events.Event]
) -> None:
    count = len(sent)
    assert [event.seq for event in returned] == list(range(1, count + 1))
    assert [event.id for event in returned] == [event.id for event in sent]

    def stored() -> tuple[list[tuple[int, dict[str, Any]]], Session]:
        rows = Event.objects.filter(session__key=session.id).order_by("seq")
        return list(rows.values_list("seq", "payload")), Session.objects.get(key=session.id)

    rows, row = await sync_to_async(stored)()
    assert [seq for seq, _ in rows] == list(range(1, count + 1))
    assert [payload["id"] for _, payload in rows] == [event.id for event in sent]
    assert [payload["seq"] for _, payload in rows] == list(range(1, count + 1))
    assert row.last_seq == count
    last_delta = max(n for n in range(count) if n % 2)
    assert row.state == {"n": last_delta} == session.state


async def test_appends_after_their_backend_was_terminated_are_stored_once() -> None:
    session = await _new_session()
    service = DjangoSessionService()
    sent = [_message(session, n) for n in range(30)]
    returned = []
    kills = 0
    with _admin() as admin:
        for n, event in enumerate(sent):
            returned.append(await service.append_event(session, event))
            if n % 3 == 0:
                kills += _terminate_writer(admin)
    assert kills == 10
    await _assert_stored_once(session, sent, returned)


async def test_appends_survive_backends_terminated_at_random_moments() -> None:
    """Appends go on until at least 150 are stored and the writer lost its backend at
    least five times, however fast this machine runs them."""
    session = await _new_session()
    service = DjangoSessionService()
    sent: list[core_events.Event] = []
    returned: list[core_events.Event] = []
    done = threading.Event()
    kills: list[int] = []

    def kill_repeatedly() -> None:
        chance = random.Random(7)  # noqa: S311 (pauses, not secrets)
        with _admin() as admin:
            while not done.wait(chance.uniform(0.03, 0.12)):
                kills.append(_terminate_writer(admin))

    killer = threading.Thread(target=kill_repeatedly, daemon=True)
    killer.start()
    try:
        while (len(sent) < 150 or sum(kills) < 5) and len(sent) < 5_000:
            sent.append(_message(session, len(sent)))
            returned.append(await service.append_event(session, sent[-1]))
    finally:
        done.set()
        killer.join(timeout=10)
    await _close_orm_connection()  # the killer's last round may have ended it
    assert sum(kills) >= 5
    await _assert_stored_once(session, sent, returned)


async def test_a_commit_whose_reply_was_lost_is_not_stored_again() -> None:
    """A proxy forwards the append to the server, lets it commit, then drops the reply
    and closes the client's socket: the retry finds the stored event by its id."""
    session = await _new_session()
    service = DjangoSessionService()
    sent = [_message(session, n) for n in range(12)]
    returned = []
    settings = connection.settings_dict
    upstream = (settings["HOST"] or "127.0.0.1", int(settings["PORT"] or 5432))
    with _ReplyDroppingProxy(upstream) as proxy, _database_port(proxy.port):
        await _close_orm_connection()  # the ORM thread reconnects through the proxy
        for n, event in enumerate(sent):
            if n % 4 == 1:
                proxy.drop_next_reply_to(b"studio_event")
            returned.append(await service.append_event(session, event))
        assert proxy.dropped == 3
    await _close_orm_connection()
    await _assert_stored_once(session, sent, returned)


@sync_to_async
def _close_orm_connection() -> None:
    connection.close()


@contextmanager
def _database_port(port: int) -> Iterator[None]:
    """New connections (every thread's) go to ``port`` on loopback meanwhile: the
    connection pool, made with the old address, is closed on the way in and out."""
    settings = connection.settings_dict
    saved = settings["HOST"], settings["PORT"]
    connection.close_pool()
    settings["HOST"], settings["PORT"] = "127.0.0.1", str(port)
    try:
        yield
    finally:
        connection.close_pool()
        settings["HOST"], settings["PORT"] = saved


class _ReplyDroppingProxy:
    """A TCP proxy in front of PostgreSQL. Armed with a marker, it forwards the next
    client message containing it, waits for the server's reply (so the statement has
    run and committed), then closes both sockets without forwarding that reply."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._marker: bytes | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.dropped = 0

    def drop_next_reply_to(self, marker: bytes) -> None:
        with self._lock:
            self._marker = marker

    def __enter__(self) -> _ReplyDroppingProxy:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        cut = False  # the reply now coming from the server is to be dropped
        with client, server, selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ, server)
            selector.register(server, selectors.EVENT_READ, client)
            while not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.5):
                    source: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = source.recv(65536)
                    if not data:
                        return
                    if source is server and cut:
                        self.dropped += 1
                        return  # closing both sockets: the client never sees the reply
                    if source is client:
                        cut = self._arm(data)
                    key.data.sendall(data)

    def _arm(self, data: bytes) -> bool:
        with self._lock:
            if self._marker is None or self._marker not in data:
                return False
            self._marker = None
            return True
