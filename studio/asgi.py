"""ASGI entry point: HTTP through Django, websockets through Channels, and the run
manager that executes runs inside this server (``studio.runs``)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (after Django setup)
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from studio.routing import websocket_urlpatterns  # noqa: E402
from studio.runs import with_run_manager  # noqa: E402

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
