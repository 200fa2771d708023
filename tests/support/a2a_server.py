"""A real A2A server for the tests, written with the ``a2a-sdk``'s own server parts
(``DefaultRequestHandler``, an ``AgentExecutor``, its in-memory task store, its
Starlette routes), served by uvicorn on 127.0.0.1.

Its agent echoes the request in steps: a working status ("thinking about ..."), an
artifact (``echo: <request>``), then completed. A request containing ``fail`` fails
the task; one containing ``input`` asks for input. It answers only requests bearing
``TOKEN`` (401 otherwise), and records the ``Authorization`` headers it saw in
``SEEN_AUTH``, so a test can tell the client sent its stored secret.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import Any

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Role,
    TaskState,
)
from starlette.applications import Starlette

TOKEN = "remote-agent-secret-token-123"
SEEN_AUTH: list[str] = []


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        request = context.get_user_input()
        task = context.current_task or new_task_from_user_message(context.message)  # type: ignore[arg-type]
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work(_said(f"thinking about {request}", task.id, task.context_id))
        if "fail" in request:
            await updater.failed(_said("cannot do that", task.id, task.context_id))
            return
        if "input" in request:
            await updater.update_status(
                TaskState.TASK_STATE_INPUT_REQUIRED, _said("which one?", task.id, task.context_id)
            )
            return
        await updater.add_artifact([Part(text=f"echo: {request}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is not None:
            await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def _said(text: str, task_id: str, context_id: str) -> Any:
    message = new_text_message(text, context_id=context_id, task_id=task_id, role=Role.ROLE_AGENT)
    return message


def card(url: str, *, streaming: bool) -> AgentCard:
    return AgentCard(
        name="echo",
        description="Echoes what it is asked.",
        version="1",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes.", tags=["test"])],
    )


Scope = dict[str, Any]
ASGI = Callable[
    [Scope, Callable[[], Awaitable[Any]], Callable[[MutableMapping[str, Any]], Awaitable[None]]],
    Awaitable[None],
]


def _guarded(app: ASGI) -> ASGI:
    async def guarded(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode()
            SEEN_AUTH.append(auth)
            if auth != f"Bearer {TOKEN}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"{}"})
                return
        await app(scope, receive, send)

    return guarded


@contextmanager
def serve(
    *, streaming: bool = True, rpc_url: str | None = None, startup_timeout_s: float = 10.0
) -> Iterator[str]:
    """Serve the echo agent on an ephemeral 127.0.0.1 port, from a thread; yields its
    base URL (its card under ``/.well-known/agent-card.json``), stops it on exit. The
    card names ``rpc_url`` as where to send messages, if given (a card pointing
    elsewhere), else the base URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    agent_card = card(rpc_url or url, streaming=streaming)
    handler = DefaultRequestHandler(EchoExecutor(), InMemoryTaskStore(), agent_card)
    routes = [
        *create_agent_card_routes(agent_card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
    ]
    config = uvicorn.Config(_guarded(Starlette(routes=routes)), log_level="warning")
    http = uvicorn.Server(config)
    thread = threading.Thread(target=http.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout_s
        while not http.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the A2A test server did not start")
            thread.join(timeout=0.01)
        yield url
    finally:
        http.should_exit = True
        thread.join()
        sock.close()
