"""Websocket routes."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from studio.auth import RevocableSocketMixin
from studio.consumers import SessionConsumer


class LiveSessionConsumer(RevocableSocketMixin, SessionConsumer):
    """The live timeline, closed when its user's sign-in ends (studio.auth)."""


websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/sessions/<str:session_id>/", LiveSessionConsumer.as_asgi()),
]
