"""Remote A2A agents (``RemoteAgent``): the rules a registration follows, shared by the
page's form, the API's serializer and the admin, and removing one.

A name is the spec name pattern (checked by the fields), one per owner, and not
renamed while agents list it; the URL is an http(s) URL Studio may send requests to
(``studio.mcp.checks``, the MCP servers' check); a token is visible ASCII.
Reading the card is ``studio.a2a.cards.refresh``.
"""

from __future__ import annotations

import re

from django.contrib.auth.models import AbstractBaseUser

from studio.agents import specs as agent_specs
from studio.errors import ConflictError
from studio.mcp import checks as mcp_checks
from studio.models import RemoteAgent

MAX_TOKEN_CHARS = 4_000
TOKEN_PATTERN = r"^[!-~]*$"  # noqa: S105 (a pattern, not a password)
"""Visible ASCII, no spaces: what an HTTP header carries as is (RFC 6750's b64token and
more); also the API schema's pattern."""


def refresh_card(remote: RemoteAgent) -> RemoteAgent:
    """``studio.a2a.cards.refresh``: ``remote`` with its card fetched again (or the error
    recorded). The A2A SDK is imported here, on first use: its client and protobuf
    types took ~0.25 s of every Studio process's start-up, and most never fetch a card."""
    from studio.a2a import cards

    return cards.refresh(remote)


def name_problem(owner: AbstractBaseUser, name: str, instance: RemoteAgent | None) -> str | None:
    """Why ``name`` may not be (the instance's new) name, or ``None``."""
    others = RemoteAgent.objects.filter(owner_id=owner.pk, name=name)
    if instance is not None:
        others = others.exclude(pk=instance.pk)
    if others.exists():
        return f"you already have a remote agent named {name!r}"
    old = instance.name if instance is not None else name
    if old != name and (users := agent_specs.agents_using_remote_agent(owner, old)):
        return f"agents name this remote agent by its current name: {', '.join(users)}"
    return None


def url_problem(url: str) -> mcp_checks.InvalidValue | None:
    try:
        mcp_checks.check_url(url)
    except mcp_checks.InvalidValue as exc:
        return exc
    return None


def token_problem(token: str) -> str | None:
    if len(token) > MAX_TOKEN_CHARS:
        return f"at most {MAX_TOKEN_CHARS} characters"
    if not re.fullmatch(TOKEN_PATTERN, token):
        return "visible ASCII characters only: no spaces, line breaks or other letters"
    return None


def users_of(remote: RemoteAgent) -> list[str]:
    """The owner's agents that list ``remote``."""
    return agent_specs.agents_using_remote_agent(remote.owner, remote.name)


def delete_remote_agent(remote: RemoteAgent) -> None:
    """Remove ``remote``; ``ConflictError`` while the owner's agents list it."""
    if users := users_of(remote):
        raise ConflictError(
            f"remote agent {remote.name!r} is used by: {', '.join(users)}; "
            "change those agents first",
            code="remote_agent_in_use",
        )
    remote.delete()
