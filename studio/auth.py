"""Sign-in hardening: login rate limiting, and closing a user's websockets when their
sign-in ends (logout, password change, deactivation).

A websocket outlives the request that authenticated it, so ending a sign-in must reach
the sockets too: each live consumer joins its user's group and its login session's
group (``user_groups``); the signal handlers here send those groups ``auth.revoked``,
and the consumer closes with 4401.

Scripts authenticate a websocket with their API token in the upgrade request's
``Authorization: Token <key>`` header (``TokenSocketAuth``), never in the URL, which
proxies and logs keep. A browser cannot set that header on a websocket, so a page of
another origin cannot use a token: such upgrades need no Origin. Deleting the token
closes its sockets.
"""

from __future__ import annotations

import hashlib
import logging
import math
import secrets
import time
from collections.abc import Mapping
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model, user_logged_out
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.views import LoginView
from django.core import signing
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.signals import post_delete, pre_save
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from rest_framework.authtoken.models import Token
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from studio.db import db_sync_to_async
from studio.gates.rate_limits import take_sign_in
from studio.metrics import SIGN_INS_REFUSED

logger = logging.getLogger(__name__)

REVOKED = "auth.revoked"
CLOSE_UNAUTHENTICATED = 4401  # as studio.live: the client must sign in again


# Sign-in rate limiting


def _client_ip(request: HttpRequest) -> str:
    # Behind a proxy this is the proxy: configure the proxy to limit too, or set
    # REMOTE_ADDR from a trusted X-Forwarded-For there (the app must not trust it).
    return str(request.META.get("REMOTE_ADDR", ""))


def sign_in_wait(request: HttpRequest, username: str) -> float | None:
    """Count one sign-in attempt against the client's address and against the
    username (so a distributed guess at one account is limited too): ``None`` while
    both have room, else the seconds until they may try again. Studio's sign-in page,
    the admin's and the token exchange share the count, and so do all servers (it is
    kept in the database). Each refusal is logged and counted (``/metrics``).

    A browser that signed in to the account before counts against its device cookie
    instead of the account (``_remember_device``): anyone may use up an account's count,
    and the account's owner is not locked out by it on the browsers they use."""
    address, account = _client_ip(request), _account(username)
    device = _device(request, account)
    keys = (f"ip:{address}", f"device:{device}" if device else f"user:{account}")
    wait = take_sign_in(keys, time.time())
    if wait is not None:
        logger.warning("sign-in rate limit reached from %s", address)
        SIGN_INS_REFUSED.inc()
    return wait


class SignInForm(AuthenticationForm):
    """Studio's sign-in form: it counts its attempt (``sign_in_wait``) before it checks
    the password, and over the limit refuses without checking it (the right password
    does not get in either). In the form, so that every page that signs in with one is
    limited alike: Studio's and the admin's (``AdminSignInForm``)."""

    wait: float | None = None

    def clean(self) -> dict[str, Any]:
        request = self.request
        if request is None:
            raise TypeError("a sign-in form counts attempts by the request's address: pass it")
        self.wait = sign_in_wait(request, str(self.data.get("username", "")))
        if self.wait is not None:
            later = in_words(math.ceil(self.wait))
            raise ValidationError(
                f"Too many sign-in attempts. Try again in {later}.", code="rate_limited"
            )
        return super().clean()


class AdminSignInForm(SignInForm, AdminAuthenticationForm):
    """The admin's sign-in form (staff only), counted as Studio's."""


def _answered(request: HttpRequest, response: HttpResponse) -> HttpResponse:
    """``response`` of a sign-in view: 429 with ``Retry-After`` when its form was refused
    for the rate limit; with the browser's device cookie when it signed in."""
    context = getattr(response, "context_data", None) or {}
    wait = getattr(context.get("form"), "wait", None)
    if wait is not None:
        response.status_code = 429
        response["Retry-After"] = str(math.ceil(wait))
    elif request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
        _remember_device(request, response, request.user.get_username())
    return response


# Device cookies (OWASP's "Slow Down Online Guessing Attacks with Device Cookies")

DEVICE_COOKIE = "studio_device"
DEVICE_MAX_AGE_S = 90 * 24 * 3600
DEVICE_ACCOUNTS = 5
"""Accounts a browser's device cookie remembers (people share a browser, or keep a
second account): the one signed in to longest ago is forgotten first."""
_DEVICE_SALT = "studio.auth.device"


def _account(username: str) -> str:
    """The key of a username in the counts: its digest (names tried are not stored)."""
    return hashlib.sha256(username.strip().lower().encode()).hexdigest()


def _remember_device(request: HttpRequest, response: HttpResponse, username: str) -> None:
    """Give the browser that just signed in as ``username`` a device cookie: signed,
    HttpOnly, naming the device by a random id and the accounts signed in to from it by
    their digests, the newest first and at most ``DEVICE_ACCOUNTS`` (one browser, one
    id: its attempts at any of them share one count, which carries on)."""
    account = _account(username)
    device, accounts = _device_cookie(request)
    accounts = [account, *(a for a in accounts if a != account)][:DEVICE_ACCOUNTS]
    response.set_cookie(
        DEVICE_COOKIE,
        signing.dumps(
            {"a": accounts, "d": device or secrets.token_urlsafe(16)},
            salt=_DEVICE_SALT,
            compress=True,
        ),
        max_age=DEVICE_MAX_AGE_S,
        secure=settings.SESSION_COOKIE_SECURE,
        httponly=True,
        samesite="Lax",
    )


def _device(request: HttpRequest, account: str) -> str | None:
    """The id of the request's device cookie when it was given to a browser that signed
    in as ``account``; ``None`` for no cookie, one of other accounts only, an expired or
    a forged one."""
    device, accounts = _device_cookie(request)
    return device if account in accounts else None


def _device_cookie(request: HttpRequest) -> tuple[str | None, list[str]]:
    """The request's device cookie, checked: its device id and its accounts' digests
    (``(None, [])`` for none, an expired or a forged one). A cookie given before it
    named several accounts names one, as a string."""
    raw = request.COOKIES.get(DEVICE_COOKIE)
    if not raw:
        return None, []
    try:
        value = signing.loads(raw, salt=_DEVICE_SALT, max_age=DEVICE_MAX_AGE_S)
    except signing.BadSignature:
        return None, []
    if not isinstance(value, dict):
        return None, []
    device, accounts = value.get("d"), value.get("a")
    if not isinstance(device, str) or not device:
        return None, []
    if isinstance(accounts, str):
        accounts = [accounts]
    if not isinstance(accounts, list):
        return None, []
    return device, [a for a in accounts if isinstance(a, str)][:DEVICE_ACCOUNTS]


class RateLimitedLoginView(LoginView):
    """Django's login view, answering 429 once a client or an account has used up its
    attempts for the period."""

    authentication_form = SignInForm

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return _answered(request, super().post(request, *args, **kwargs))


def admin_login(request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
    """The admin's sign-in page (``admin.site.login``, with ``AdminSignInForm``),
    answering 429 as Studio's does."""
    return _answered(request, admin.site.login(request, extra_context))


def in_words(seconds: int) -> str:
    """``42 seconds``; from two minutes on, whole minutes rounded up (``3 minutes``)."""
    if seconds >= 120:
        return f"{math.ceil(seconds / 60)} minutes"
    return f"{seconds} second{'s' * (seconds != 1)}"


class SignInThrottle(BaseThrottle):
    """The token exchange's throttle: the sign-in page's count (``sign_in_wait``), by
    the client's address and the username it sends."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        data = request.data
        username = data.get("username", "") if isinstance(data, Mapping) else ""
        self._wait = sign_in_wait(request, str(username))
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


# Websockets: closed when the sign-in ends


def user_group(user_id: object) -> str:
    return f"studio.user.{user_id}"


def login_group(session_key: str) -> str:
    return f"studio.login.{session_key}"


def token_group(key: str) -> str:
    return f"studio.token.{hashlib.sha256(key.encode()).hexdigest()[:32]}"


def user_groups(scope: dict[str, Any]) -> list[str]:
    """The groups a socket joins so that the end of its sign-in closes it."""
    user = scope.get("user")
    if user is None or not user.is_authenticated:
        return []
    groups = [user_group(user.pk)]
    if token := scope.get(SIGNED_IN_WITH):
        groups.append(token_group(token))
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


@receiver(post_delete, sender=Token, dispatch_uid="studio.auth.token_deleted")
def _on_token_deleted(sender: Any, instance: Token, **kwargs: Any) -> None:
    revoke(token_group(instance.key))


# Websockets: token authentication

SIGNED_IN_WITH = "studio.signed_in_with"
"""Where ``TokenSocketAuth`` notes the key a socket signed in with."""


def authorization_header(scope: dict[str, Any]) -> str | None:
    """The upgrade request's one ``Authorization`` header (``None`` when absent, or when
    it was sent more than once)."""
    values = [v for name, v in scope.get("headers", []) if name.lower() == b"authorization"]
    return values[0].decode("latin1") if len(values) == 1 else None


class TokenSocketAuth:
    """ASGI middleware: a websocket whose upgrade carries ``Authorization: Token <key>``
    is that token's user's (anonymous when the key is unknown or its user inactive)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        header = authorization_header(scope)
        if scope["type"] == "websocket" and header is not None:
            key = _token_key(header)
            user = await _token_user(key) if key else None
            scope = {
                **scope,
                "user": user or AnonymousUser(),
                SIGNED_IN_WITH: key if user else None,
            }
        return await self.app(scope, receive, send)


def _token_key(header: str) -> str | None:
    scheme, _, key = header.strip().partition(" ")
    key = key.strip()
    return key if scheme.lower() == "token" and key and len(key) <= 64 else None


async def _token_user(key: str) -> Any:
    return await db_sync_to_async(_active_user_of)(key)


def _active_user_of(key: str) -> Any:
    token = Token.objects.select_related("user").filter(key=key).first()
    return token.user if token is not None and token.user.is_active else None


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
