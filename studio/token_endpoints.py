"""What Studio's token-authenticated ASGI endpoints share: the MCP endpoint at ``/mcp``
(``studio.mcp_endpoint``) and the A2A endpoints under ``/a2a/`` (``studio.a2a_endpoint``).

Both check the Host header against Django's ``ALLOWED_HOSTS``, sign the caller in with
an MCP token (``Authorization: Bearer smcp_...``, made on the MCP tokens page), and
answer their own errors as small JSON bodies. A bearer token is no ambient credential
(no browser sends it by itself), so neither needs CSRF or Origin checks.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from studio import services
from studio.asgi_types import Scope, Send
from studio.db import db_sync_to_async


def header(scope: Scope, name: bytes) -> str | None:
    """The request's one ``name`` header (lower case), or ``None`` if absent or repeated."""
    values = [v for key, v in scope.get("headers", []) if key.lower() == name]
    return values[0].decode("latin1") if len(values) == 1 else None


def host_allowed(scope: Scope) -> bool:
    host = header(scope, b"host")
    if host is None:
        return False
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


async def token_user_id(scope: Scope) -> Any | None:
    """The id of the active user whose MCP token the request bears, or ``None``."""
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    user = await db_sync_to_async(services.user_for_token)(token.strip())
    return None if user is None else user.pk


async def answer(
    send: Send, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    content = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})


async def bad_host(send: Send) -> None:
    await answer(send, 400, {"error": "invalid_request", "detail": "bad Host header"})


async def unauthorized(send: Send, realm: str) -> None:
    await answer(
        send,
        401,
        {"error": "invalid_token", "detail": "send Authorization: Bearer <MCP token>"},
        ((b"www-authenticate", f'Bearer realm="{realm}"'.encode()),),
    )
