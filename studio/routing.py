"""Websocket routes."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from studio.consumers import SessionConsumer

websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/sessions/<str:session_id>/", SessionConsumer.as_asgi()),
]
