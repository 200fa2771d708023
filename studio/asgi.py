"""ASGI entry point: HTTP through Django, websockets through Channels, and the run
executor that runs (or, with worker execution, sweeps) inside this server
(``studio.runs``).

A websocket upgrade is admitted only from Studio's own pages: its Origin must be the
request's own origin (scheme, host and port of its Host header) or one listed in
``CSRF_TRUSTED_ORIGINS``. A page served by another app on the same machine (another
port) is a different origin and is refused, as are ``null`` and missing origins. A
script's upgrade that signs in with an API token in its ``Authorization`` header
(``studio.auth.TokenSocketAuth``) needs no Origin: no browser page can send one."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from studio import heap

heap.pause_collection()  # until the end of this module's start-up (studio.heap)

from django.conf import settings  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402
from django.http.request import split_domain_port, validate_host  # noqa: E402
from django.utils.http import is_same_domain  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (after Django setup)
from channels.security.websocket import WebsocketDenier  # noqa: E402

from studio import auth, runs, security  # noqa: E402
from studio.asgi_types import ASGIApp, Receive, Scope, Send  # noqa: E402
from studio.routing import websocket_urlpatterns  # noqa: E402
from studio.traces import otel  # noqa: E402
from studio.web.request_threads import with_request_threads  # noqa: E402

# Once per server process (runserver's and Daphne's alike), with the other start-up lines.
security.log_policy()

Origin = tuple[str, str, int]  # scheme, host, port
_DEFAULT_PORTS = {"http": 80, "https": 443}


def same_origin_only(app: ASGIApp) -> ASGIApp:
    """``app`` behind the origin rule of this module's docstring; a refused upgrade is
    closed before it is accepted (the client sees HTTP 403)."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        token_signed = auth.authorization_header(scope) is not None
        if scope["type"] == "websocket" and not token_signed and not origin_allowed(scope):
            await WebsocketDenier()(scope, receive, send)
            return
        await app(scope, receive, send)

    return application


def origin_allowed(scope: Scope) -> bool:
    headers: dict[str, list[str]] = {}
    for name, value in scope.get("headers", []):
        headers.setdefault(name.decode("latin1").lower(), []).append(value.decode("latin1"))
    origins, hosts = headers.get("origin", []), headers.get("host", [])
    if len(origins) != 1 or len(hosts) != 1:
        return False
    origin = parse_origin(origins[0])
    own = _own_origin(hosts[0], secure=_secure(scope, headers))
    if origin is None or own is None:
        return False
    return origin == own or any(_trusted(origin, t) for t in settings.CSRF_TRUSTED_ORIGINS)


def parse_origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` as a comparable triple (default ports filled in); None
    for ``null``, other schemes, paths, credentials or anything malformed."""
    try:
        parts = urlsplit(text.strip().lower())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None
    if parts.username is not None or parts.path not in ("", "/") or parts.query:
        return None
    return parts.scheme, parts.hostname, port or _DEFAULT_PORTS[parts.scheme]


def _own_origin(host: str, *, secure: bool) -> Origin | None:
    """The origin the client addressed: its Host header, which must name one of
    ALLOWED_HOSTS (as for HTTP requests), with the scheme it connected with."""
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    if not domain or not validate_host(domain, allowed):
        return None
    return parse_origin(f"{'https' if secure else 'http'}://{host}")


def _secure(scope: Scope, headers: dict[str, list[str]]) -> bool:
    """Whether the client connected over TLS: to this server (``wss``), or to a proxy
    that says so in the SECURE_PROXY_SSL_HEADER, as Django reads it for HTTP."""
    if scope.get("scheme") == "wss":
        return True
    proxy_header: tuple[str, str] | None = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header is None:
        return False
    name, secure_value = proxy_header
    values = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower(), [])
    return len(values) == 1 and values[0].split(",")[0].strip() == secure_value


def _trusted(origin: Origin, trusted: str) -> bool:
    """Whether ``origin`` matches a CSRF_TRUSTED_ORIGINS entry (``*.`` admits subdomains,
    as Django's CSRF check does)."""
    wildcard = "://*." in trusted
    expected = parse_origin(trusted.replace("://*.", "://", 1))
    if expected is None:
        return False
    scheme, host, port = expected
    if wildcard:
        return origin[0] == scheme and origin[2] == port and is_same_domain(origin[1], f".{host}")
    return origin == expected


_MCP_ENDPOINT = "studio.mcp_endpoint.app"
_A2A_ENDPOINT = "studio.a2a_endpoint.app"


def with_mcp_endpoint(app: ASGIApp) -> ASGIApp:
    """``app``, with Studio's MCP endpoint (``studio.mcp_endpoint``) at ``/mcp`` and its
    A2A endpoints (``studio.a2a_endpoint``) under ``/a2a/``. Each SDK takes a while to
    import, so it is loaded on its first request, off the event loop, not with the
    server."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
        elif scope["path"] in ("/mcp", "/mcp/"):
            await (await _loaded(_MCP_ENDPOINT)).endpoint(scope, receive, send)
        elif scope["path"].startswith("/a2a/"):
            await (await _loaded(_A2A_ENDPOINT)).endpoint(scope, receive, send)
        else:
            await app(scope, receive, send)

    return application


async def _loaded(name: str) -> Any:
    module = sys.modules.get(name)
    if module is None:
        module = await asyncio.to_thread(importlib.import_module, name)
    return module


def with_run_executor(app: ASGIApp) -> ASGIApp:
    """``app``, starting the run executor with the server: at lifespan start-up when the
    server sends lifespan events, else on the first connection (Daphne sends none; its
    health check is that first connection)."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        runs.executor().start()
        await app(scope, receive, send)

    return application


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            runs.executor().start()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await runs.executor().aclose()
            if (endpoint := sys.modules.get(_MCP_ENDPOINT)) is not None:
                await endpoint.endpoint.aclose()
            await asyncio.to_thread(otel.shutdown)  # the runs just ended, within a bound
            await send({"type": "lifespan.shutdown.complete"})
            return


application = with_run_executor(
    ProtocolTypeRouter(
        {
            # Each request's sync code on a kept thread (studio.web.request_threads).
            "http": with_request_threads(with_mcp_endpoint(django_asgi_app)),  # type: ignore[arg-type]
            "websocket": same_origin_only(
                AuthMiddlewareStack(auth.TokenSocketAuth(URLRouter(websocket_urlpatterns)))
            ),
        }
    )
)

if settings.STUDIO_PRELOAD and runs.executor().executes_in_servers:
    runs.preload(runs.MODEL_CLIENT)  # not in its first run (and frozen with the rest, below)
heap.freeze_startup_heap()  # last: what start-up made is not walked by each full collection
