"""Helpers for the live-run tests: websocket viewers on the real ASGI application,
scripted agents, and waiting on observable state with a bound."""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from studio import runs, services
from studio.models import Agent, Event, ModelConfig, Run, Session
from studio.runs.executor import RunExecutor
from tests.studio.conftest import make_session

TIMEOUT_S = 10.0
ORIGIN = b"http://localhost"
# The Host a browser on ORIGIN sends: websocket upgrades must come from their own origin.
HOST = b"localhost"
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}


_sockets: list[WebsocketCommunicator] = []
"""The sockets ``open_socket`` opened in the running test, closed after it."""


@pytest.fixture(autouse=True)
async def run_manager() -> AsyncIterator[RunExecutor]:
    """The process's run executor, stopped (its runs interrupted) after each test, with
    the in-memory channel layer emptied: both belong to one test's event loop.

    Before that, the test's sockets are closed, so their sessions' watches stop reading
    the database; and after it, the thread the ORM runs on is waited for. A read still
    in flight there when the test database is emptied (on SQLite's shared in-memory
    database) locks its table and fails the flush."""
    _sockets.clear()  # any a module without this fixture opened: not this loop's
    executor = runs.executor()
    yield executor
    while _sockets:
        communicator = _sockets.pop()
        if not communicator.future.done():
            await communicator.disconnect(timeout=TIMEOUT_S)
    await executor.aclose()
    for alias in settings.CHANNEL_LAYERS:
        await get_channel_layer(alias).flush()
    await sync_to_async(_orm_idle)()


def _orm_idle() -> None:
    """Nothing: run on the thread ``sync_to_async`` gives the ORM, it returns once the
    calls queued there before it have ended."""


@sync_to_async
def stored(session: Session) -> list[dict[str, Any]]:
    """The session's stored events, as wire JSON, in seq order."""
    rows = Event.objects.filter(session=session).order_by("seq")
    return list(rows.values_list("payload", flat=True))


@sync_to_async
def session_cookie(user: User) -> bytes:
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


@dataclass
class Viewer:
    """A websocket client of ``/ws/sessions/<id>/`` that sorts the frames it gets (one
    a message; ``batched``: the browser's arrays of frames, counted in ``messages``)."""

    communicator: WebsocketCommunicator
    batched: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    partials: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)
    messages: list[int] = field(default_factory=list)
    """How many frames each message carried."""
    _unread: deque[dict[str, Any]] = field(default_factory=deque)

    @property
    def seqs(self) -> list[int]:
        return [event["seq"] for event in self.events]

    @property
    def status(self) -> dict[str, Any] | None:
        return self.statuses[-1] if self.statuses else None

    @property
    def run_status(self) -> str | None:
        status = self.status
        return None if status is None or status["run"] is None else status["run"]["status"]

    def events_of_type(self, kind: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["type"] == kind]

    async def receive(self, within: float = TIMEOUT_S) -> dict[str, Any]:
        if not self._unread:
            message = json.loads(await self.communicator.receive_from(within))
            if self.batched and not (isinstance(message, dict) and message["type"] == "error"):
                assert isinstance(message, list) and message, message  # replies come alone
            frames = message if isinstance(message, list) else [message]
            self.messages.append(len(frames))
            self._unread.extend(frames)
        frame = self._unread.popleft()
        self.frames.append(frame)
        match frame["type"]:
            case "event" if frame["event"]["partial"]:
                self.partials.append(frame)
            case "event":
                self.events.append(frame["event"])
            case "status":
                self.statuses.append(frame)
            case "error":
                self.errors.append(frame)
        return frame

    async def until(self, done: Callable[[Viewer], bool], *, within: float = TIMEOUT_S) -> Viewer:
        """Receive frames until ``done(self)``; fails after ``within`` seconds."""
        deadline = time.monotonic() + within
        while not done(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out; last frames: {self.frames[-5:]}")
            await self.receive(within=left)
        return self

    async def until_ended(self, *, within: float = TIMEOUT_S) -> Viewer:
        return await self.until(lambda v: v.run_status in ENDED, within=within)

    async def send(self, frame: dict[str, Any]) -> None:
        await self.communicator.send_to(text_data=json.dumps(frame))

    async def close(self) -> None:
        await self.communicator.disconnect()


async def open_socket(
    application: Any,
    session_id: object,
    user: User | None,
    *,
    after: int | str | None = None,
    origin: bytes = ORIGIN,
    path: str | None = None,
    batch: bool = False,
) -> tuple[WebsocketCommunicator, bool]:
    path = path or f"/ws/sessions/{session_id}/"
    query = ([f"after={after}"] if after is not None else []) + (["batch=1"] if batch else [])
    if query:
        path += "?" + "&".join(query)
    headers = [(b"host", HOST), (b"origin", origin)]
    if user is not None:
        headers.append((b"cookie", await session_cookie(user)))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    _sockets.append(communicator)
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    return communicator, connected


async def watch(
    application: Any,
    session: Session,
    user: User,
    *,
    after: int | None = None,
    batch: bool = False,
) -> Viewer:
    """A connected viewer that has received its first status frame (the backlog, if
    any, comes before it)."""
    communicator, connected = await open_socket(
        application, session.pk, user, after=after, batch=batch
    )
    assert connected
    viewer = Viewer(communicator, batched=batch)
    return await viewer.until(lambda v: bool(v.statuses))


async def eventually[T](
    check: Callable[[], Awaitable[T]], *, within: float = TIMEOUT_S, interval: float = 0.02
) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within}s (last: {value!r})")
        await asyncio.sleep(interval)


def script_model(
    owner: User, name: str, script: list[dict[str, Any]], *, token_delay_s: float = 0.0
) -> ModelConfig:
    return ModelConfig.objects.create(
        owner=owner,
        name=name,
        provider="scripted",
        options={"script": script, "loop": False, "token_delay_s": token_delay_s},
    )


def scripted_agent(
    owner: User,
    name: str,
    script: list[dict[str, Any]],
    *,
    token_delay_s: float = 0.0,
    **spec: Any,
) -> Agent:
    """An agent on its own scripted model (named after it)."""
    script_model(owner, f"{name}_model", script, token_delay_s=token_delay_s)
    full = {"name": name, "model": f"{name}_model", "instruction": "Follow the script.", **spec}
    return services.create_agent(owner, name=name, spec=full)


def slow_agent(owner: User, name: str = "slow", *, words: int = 400) -> Agent:
    """An agent whose one answer streams ``words`` tokens, 20 ms apart."""
    text = " ".join(f"w{i}" for i in range(words))
    return scripted_agent(owner, name, [{"text": text}], token_delay_s=0.02)


async def latest_run(session: Session) -> Run | None:
    return await Run.objects.filter(session=session).order_by("-created_at").afirst()


@sync_to_async
def new_session(owner: User, agent_name: str | None = None) -> Session:
    """A session of ``owner``'s agent ``agent_name`` (default: the conftest helper)."""
    agent = None if agent_name is None else Agent.objects.get(owner=owner, name=agent_name)
    return make_session(owner, agent)


async def run_to_end(viewer: Viewer, text: str) -> Viewer:
    """Start a run over ``viewer``'s socket and receive frames until it has ended."""
    before = len(viewer.statuses)
    await viewer.send({"type": "user_message", "text": text})
    return await viewer.until(lambda v: len(v.statuses) > before and v.run_status in ENDED)
