"""Websocket routes."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from studio.auth import RevocableSocketMixin
from studio.consumers import SessionConsumer
from studio.consumers.evals import EvalConsumer
from studio.consumers.inbox import InboxConsumer


class LiveSessionConsumer(RevocableSocketMixin, SessionConsumer):
    """The live timeline, closed when its user's sign-in ends (studio.auth)."""


class LiveInboxConsumer(RevocableSocketMixin, InboxConsumer):
    """The approval inbox's live count and list, closed when its user's sign-in ends."""


class LiveEvalConsumer(RevocableSocketMixin, EvalConsumer):
    """An eval run's live progress, closed when its user's sign-in ends."""


websocket_urlpatterns: list[URLPattern | URLResolver] = [
    path("ws/sessions/<str:session_id>/", LiveSessionConsumer.as_asgi()),
    path("ws/approvals/", LiveInboxConsumer.as_asgi()),
    path("ws/evals/<str:eval_id>/", LiveEvalConsumer.as_asgi()),
]
