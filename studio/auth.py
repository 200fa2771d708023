"""Sign-in hardening: login rate limiting, and closing a user's websockets when their
sign-in ends (logout, password change, deactivation).

A websocket outlives the request that authenticated it, so ending a sign-in must reach
the sockets too: each live consumer joins its user's group and its login session's
group (``user_groups``); the signal handlers here send those groups ``auth.revoked``,
and the consumer closes with 4401.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model, user_logged_out
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.db import transaction
from django.db.models.signals import pre_save
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

REVOKED = "auth.revoked"
CLOSE_UNAUTHENTICATED = 4401  # as studio.live: the client must sign in again
_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


# Login rate limiting


def auth_rate() -> tuple[int, int]:
    """``(attempts, seconds)`` from the API's ``auth`` throttle rate, e.g. ``20/min``:
    the sign-in page and the token endpoint share one budget."""
    rest_framework: dict[str, Any] = settings.REST_FRAMEWORK
    count, _, period = str(rest_framework["DEFAULT_THROTTLE_RATES"]["auth"]).partition("/")
    return int(count), _PERIODS[period]


def _client_ip(request: HttpRequest) -> str:
    # Behind a proxy this is the proxy: configure the proxy to limit too, or set
    # REMOTE_ADDR from a trusted X-Forwarded-For there (the app must not trust it).
    return str(request.META.get("REMOTE_ADDR", ""))


def login_attempt_allowed(request: HttpRequest, username: str) -> bool:
    """Count one sign-in attempt against the client's address and against the
    username (so a distributed guess at one account is limited too)."""
    limit, period = auth_rate()
    digest = hashlib.sha256(username.strip().lower().encode()).hexdigest()
    allowed = True
    for key in (f"studio.login.ip.{_client_ip(request)}", f"studio.login.user.{digest}"):
        cache.add(key, 0, period)
        try:
            count = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.set(key, 1, period)
            count = 1
        allowed = allowed and count <= limit
    return allowed


class RateLimitedLoginView(LoginView):
    """Django's login view, answering 429 once a client or an account has used up its
    attempts for the period."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if login_attempt_allowed(request, str(request.POST.get("username", ""))):
            return super().post(request, *args, **kwargs)
        logger.warning("sign-in rate limit reached from %s", _client_ip(request))
        form = self.get_form()
        form.add_error(None, "Too many sign-in attempts. Wait a minute and try again.")
        response = self.form_invalid(form)
        response.status_code = 429
        response["Retry-After"] = str(auth_rate()[1])
        return response


# Websockets: closed when the sign-in ends


def user_group(user_id: object) -> str:
    return f"studio.user.{user_id}"


def login_group(session_key: str) -> str:
    return f"studio.login.{session_key}"


def user_groups(scope: dict[str, Any]) -> list[str]:
    """The groups a socket joins so that the end of its sign-in closes it."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return []
    groups = [user_group(user.pk)]
    session = scope.get("session")
    session_key = getattr(session, "session_key", None)
    if session_key:
        groups.append(login_group(session_key))
    return groups


def revoke(group: str) -> None:
    """Close every socket in ``group`` (after the current transaction commits)."""
    layer = get_channel_layer()
    if layer is None:
        return

    def send() -> None:
        try:
            async_to_sync(layer.group_send)(group, {"type": REVOKED})
        except Exception:  # a channel layer outage must not fail the logout or save
            logger.exception("could not close the websockets of %s", group)

    transaction.on_commit(send)


@receiver(user_logged_out, dispatch_uid="studio.auth.logged_out")
def _on_logout(sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any) -> None:
    session_key = getattr(getattr(request, "session", None), "session_key", None)
    if session_key:
        revoke(login_group(session_key))
    elif user is not None:
        revoke(user_group(user.pk))


@receiver(pre_save, sender=get_user_model(), dispatch_uid="studio.auth.user_changed")
def _on_user_saved(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """A new password or a deactivation ends every sign-in of the user."""
    if raw or instance.pk is None:
        return
    before = sender.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    deactivated = before["is_active"] and not instance.is_active
    if deactivated or before["password"] != instance.password:
        revoke(user_group(instance.pk))


class RevocableSocketMixin:
    """For a websocket consumer: join the groups that end-of-sign-in messages go to,
    and close with 4401 when one arrives (the client then signs in again)."""

    channel_layer: Any
    channel_name: str
    scope: dict[str, Any]
    _auth_groups: list[str] | None = None

    async def websocket_connect(self, message: dict[str, Any]) -> None:
        self._auth_groups = user_groups(self.scope)
        for group in self._auth_groups:
            await self.channel_layer.group_add(group, self.channel_name)
        await super().websocket_connect(message)  # type: ignore[misc]

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        for group in self._auth_groups or []:
            await self.channel_layer.group_discard(group, self.channel_name)
        await super().websocket_disconnect(message)  # type: ignore[misc]

    async def auth_revoked(self, message: dict[str, Any]) -> None:
        await self.close(code=CLOSE_UNAUTHENTICATED)  # type: ignore[attr-defined]
