"""HTTP requests run their sync code on kept threads (studio.web.request_threads): one
thread a request, never shared by requests in flight at once, used again by later
requests together with its database connection."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import User
from django.core.asgi import get_asgi_application
from django.db import connections
from django.db.backends.signals import connection_created
from rest_framework.authtoken.models import Token

from studio.asgi_types import Receive, Scope, Send
from studio.web.request_threads import RequestThreads, with_request_threads


def http_scope(path: str, headers: list[tuple[bytes, bytes]] | None = None) -> Scope:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver"), *(headers or [])],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }


async def get(app: Any, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> int:
    """GET ``path`` from ``app``; its status once the whole response is sent."""
    communicator = ApplicationCommunicator(app, http_scope(path, headers))
    await communicator.send_input({"type": "http.request", "body": b""})
    start = await communicator.receive_output(10)
    while (await communicator.receive_output(10)).get("more_body"):
        pass
    await communicator.wait(10)
    return int(start["status"])


class ThreadRecorder:
    """An ASGI app answering 200 after noting which thread its sync code ran on; a
    request to /hold waits, on the loop, until ``release`` is set."""

    def __init__(self) -> None:
        self.threads: list[int] = []
        self.release = asyncio.Event()
        self.held = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        self.threads.append(await sync_to_async(threading.get_ident)())
        if scope["path"] == "/hold":
            self.held.set()
            await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def test_a_later_request_runs_on_the_thread_an_earlier_one_used() -> None:
    recorder, threads = ThreadRecorder(), RequestThreads()
    app = with_request_threads(recorder, threads)
    assert [await get(app, "/") for _ in range(3)] == [200, 200, 200]
    first, *rest = recorder.threads
    assert first != threading.get_ident()  # off the event loop's thread
    assert rest == [first, first]
    assert len(threads.idle) == 1


async def test_requests_in_flight_at_once_each_have_a_thread_of_their_own() -> None:
    recorder, threads = ThreadRecorder(), RequestThreads()
    app = with_request_threads(recorder, threads)
    held = asyncio.create_task(get(app, "/hold"))
    await asyncio.wait_for(recorder.held.wait(), 10)
    assert await get(app, "/") == 200
    recorder.release.set()
    assert await held == 200
    assert len(set(recorder.threads)) == 2
    assert len(threads.idle) == 2  # both kept for later requests
    assert await get(app, "/") == 200
    assert recorder.threads[-1] in recorder.threads[:2]


async def test_no_more_threads_are_kept_than_asked() -> None:
    recorder, threads = ThreadRecorder(), RequestThreads(kept=1)
    app = with_request_threads(recorder, threads)
    held = asyncio.create_task(get(app, "/hold"))
    await asyncio.wait_for(recorder.held.wait(), 10)
    assert await get(app, "/") == 200
    recorder.release.set()
    await held
    assert len(threads.idle) == 1


@pytest.fixture
def connections_made() -> Iterator[list[str]]:
    made: list[str] = []

    def note(sender: Any, connection: Any, **kwargs: Any) -> None:
        made.append(connection.alias)

    connection_created.connect(note)
    yield made
    connection_created.disconnect(note)


@pytest.mark.django_db(transaction=True)
async def test_django_s_views_run_on_the_kept_thread_and_keep_its_database_connection(
    connections_made: list[str],
) -> None:
    user = await User.objects.acreate_user("reader", password="x")
    token = await Token.objects.acreate(user=user)
    threads = RequestThreads()
    app = with_request_threads(get_asgi_application(), threads)  # type: ignore[arg-type]
    auth = [(b"authorization", f"Token {token.key}".encode())]
    connections_made.clear()  # the test's own, on asgiref's thread for the ORM above
    try:
        assert [await get(app, "/api/sessions/", auth) for _ in range(3)] == [200] * 3
        # One connection, made by the first request's thread and kept by it (Django
        # made a new thread, with a new connection, for each request).
        assert connections_made == ["default"]
    finally:
        for executor in threads.idle:
            executor.submit(connections.close_all).result()
            executor.shutdown()
