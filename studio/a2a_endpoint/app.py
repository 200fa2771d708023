"""The ASGI endpoint under ``/a2a/``: one A2A server per published agent.

- ``GET /a2a/<agent id>/.well-known/agent-card.json``: the agent's card (``cards``).
- ``POST /a2a/<agent id>/``: JSON-RPC (``SendMessage``, ``SendStreamingMessage`` as
  SSE, ``GetTask``, ``CancelTask``, ``SubscribeToTask``; with the v0.3 names too:
  ``message/send``, ``message/stream``, ``tasks/get``, ``tasks/cancel``), answered by
  the SDK's dispatcher over ``handler.StudioRequestHandler``.

Before the SDK sees a request, this checks the Host header, the bearer token (401
without a valid one, the card included: a card says an agent exists) and that the
agent is the token user's and published (404 otherwise, as for an unknown id); the
caller goes into the request's scope for the handler. Bodies are capped.
"""

from __future__ import annotations

import re
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import ServerCallContextBuilder, create_jsonrpc_routes
from django.conf import settings
from starlette.applications import Starlette
from starlette.requests import Request

from studio import token_endpoints
from studio.a2a_endpoint import cards
from studio.a2a_endpoint.handler import CALLER_KEY, Caller, StudioRequestHandler
from studio.asgi_types import Receive, Scope, Send
from studio.db import db_sync_to_async
from studio.models import Agent
from studio.services import a2a_serving

PREFIX = "/a2a/"
_PATH = re.compile(r"^/a2a/(?P<agent>[0-9a-fA-F-]{36})(?P<rest>/.*)?$")
CARD_PATHS = frozenset({"/.well-known/agent-card.json", "/.well-known/agent.json"})
RPC_PATHS = frozenset({"", "/"})
MAX_BODY_BYTES = 1_000_000
REALM = "studio-a2a"


class _TokenUser(User):
    def __init__(self, user_id: Any) -> None:
        self._name = str(user_id)

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


class _ContextBuilder(ServerCallContextBuilder):
    """The call's context: the caller the endpoint authenticated, and the headers the
    SDK reads (the protocol version), without the token."""

    def build(self, request: Request) -> ServerCallContext:
        caller: Caller = request.scope[CALLER_KEY]
        headers = {k: v for k, v in request.headers.items() if k != "authorization"}
        return ServerCallContext(
            user=_TokenUser(caller.user_id), state={CALLER_KEY: caller, "headers": headers}
        )


def build_app() -> Starlette:
    routes = create_jsonrpc_routes(
        StudioRequestHandler(),
        rpc_url="/a2a/{agent_id}/",
        context_builder=_ContextBuilder(),
        enable_v0_3_compat=True,
    )
    return Starlette(routes=routes)


class A2aEndpoint:
    """One per server process; see the module docstring."""

    def __init__(self) -> None:
        self._app: Starlette | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not token_endpoints.host_allowed(scope):
            await token_endpoints.bad_host(send)
            return
        match = _PATH.match(scope["path"])
        rest = (match.group("rest") or "") if match else None
        if match is None or rest not in CARD_PATHS | RPC_PATHS:
            await _not_found(send)
            return
        user_id = await token_endpoints.token_user_id(scope)
        if user_id is None:
            await token_endpoints.unauthorized(send, REALM)
            return
        agent = await db_sync_to_async(a2a_serving.a2a_agent)(user_id, match.group("agent"))
        if agent is None:
            await _not_found(send)
            return
        if rest in CARD_PATHS:
            await self._card(scope, send, agent)
        elif scope["method"] != "POST":
            await _answer_method(send, "POST")
        elif _declared_length(scope) > MAX_BODY_BYTES:
            await token_endpoints.answer(send, 413, {"error": "too_large"})
        else:
            caller = Caller(user_id=user_id, agent_id=str(agent.pk))
            inner = {**scope, "path": cards.rpc_path(agent), CALLER_KEY: caller}
            await self.app(inner, _capped(receive), send)

    @property
    def app(self) -> Starlette:
        if self._app is None:
            self._app = build_app()
        return self._app

    async def _card(self, scope: Scope, send: Send, agent: Agent) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _answer_method(send, "GET")
            return
        card = await db_sync_to_async(cards.card_for)(agent, _base_url(scope))
        await token_endpoints.answer(send, 200, agent_card_to_dict(card))


def _base_url(scope: Scope) -> str:
    host = token_endpoints.header(scope, b"host") or ""
    secure = scope.get("scheme") == "https"
    proxy_header: tuple[str, str] | None = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header is not None:
        name = proxy_header[0].removeprefix("HTTP_").replace("_", "-").lower()
        value = token_endpoints.header(scope, name.encode())
        secure = secure or (value is not None and value.split(",")[0].strip() == proxy_header[1])
    return f"{'https' if secure else 'http'}://{host}"


def _declared_length(scope: Scope) -> int:
    value = token_endpoints.header(scope, b"content-length")
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return MAX_BODY_BYTES + 1


def _capped(receive: Receive) -> Receive:
    """``receive`` that ends the request once its body passes ``MAX_BODY_BYTES`` (a
    chunked body declares no length)."""
    seen = 0

    async def capped() -> dict[str, Any]:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY_BYTES:
                return {"type": "http.disconnect"}
        return message

    return capped


async def _not_found(send: Send) -> None:
    await token_endpoints.answer(send, 404, {"error": "not_found", "detail": "no such A2A agent"})


async def _answer_method(send: Send, allowed: str) -> None:
    await token_endpoints.answer(
        send, 405, {"error": "method_not_allowed"}, ((b"allow", allowed.encode()),)
    )


endpoint = A2aEndpoint()
