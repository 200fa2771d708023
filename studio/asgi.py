"""ASGI entry point: HTTP through Django, websockets through Channels, and the run
manager that executes runs inside this server (``studio.runs``)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (after Django setup)
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from studio.routing import websocket_urlpatterns  # noqa: E402
from studio.runs import manager  # noqa: E402

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def with_run_manager(app: ASGIApp) -> ASGIApp:
    """``app``, starting the run manager with the server: at lifespan start-up when the
    server sends lifespan events, else on the first connection (Daphne sends none; its
    health check is that first connection)."""

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        manager.ensure_started()
        await app(scope, receive, send)

    return application


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            manager.ensure_started()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await manager.aclose()
            await send({"type": "lifespan.shutdown.complete"})
            return


application = with_run_manager(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": AllowedHostsOriginValidator(
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
            ),
        }
    )
)
