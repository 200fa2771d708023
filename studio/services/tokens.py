"""Tokens other programs sign in with, of any kind (``studio.models.tokens``): an MCP
client's (``McpToken``), an OpenTelemetry exporter's (``IngestToken``). Made, revoked
and checked the same way: the token is shown once, only its digest is kept."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from studio.errors import InvalidInputError, Problem
from studio.models.tokens import AccessToken, token_digest

MAX_TOKENS_PER_USER = 20
MAX_TOKEN_CHARS = 200


def create_token[T: AccessToken](
    kind: type[T], owner: AbstractBaseUser, name: str
) -> tuple[T, str]:
    """A new token of ``kind`` for ``owner``: the row, and the token itself (shown once,
    never stored)."""
    name = name.strip()
    if not name or len(name) > 100:
        raise InvalidInputError("name", [Problem((), "invalid", "a name of 1 to 100 characters")])
    if kind._default_manager.filter(owner_id=owner.pk).count() >= MAX_TOKENS_PER_USER:
        raise InvalidInputError(
            "name",
            [Problem((), "invalid", f"at most {MAX_TOKENS_PER_USER} tokens: revoke one first")],
        )
    token = kind.PREFIX + secrets.token_urlsafe(32)
    row = kind._default_manager.create(
        owner_id=owner.pk, name=name, hint=token[:10], digest=token_digest(token)
    )
    return row, token


def revoke_token(token: AccessToken) -> None:
    token.delete()


def token_row[T: AccessToken](kind: type[T], token: str) -> T | None:
    """The row of ``token`` when it is a token of ``kind`` whose owner is active, or
    ``None``; notes when it was used."""
    if not token.startswith(kind.PREFIX) or len(token) > MAX_TOKEN_CHARS:
        return None
    row: T | None = (
        kind._default_manager.select_related("owner").filter(digest=token_digest(token)).first()
    )
    if row is None or not _owner(row).is_active:
        return None
    kind._default_manager.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row


def _owner(row: AccessToken) -> Any:
    return row.owner  # type: ignore[attr-defined]
