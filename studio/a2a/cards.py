"""Fetching a remote A2A agent's card (``RemoteAgent.card``), through the same outbound
address checks as the model and MCP clients: the URL passes
``studio.security.check_outbound_url`` first, the connection goes only to an address
that passed (``studio.checked_http``), no redirect is followed, and the body is read
up to ``MAX_CARD_BYTES``. The card keeps what Studio shows and the model reads, as
plain text cut to size: name, description, version, skills (name, description,
tags), and whether the agent streams. A card that is not one (not JSON, not the A2A
schema, too big) is a ``CardError`` that says why; the registration keeps its last
good card and records the error.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.types import AgentCard
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from asgiref.sync import async_to_sync
from django.utils import timezone

from studio import checked_http, security
from studio.models import RemoteAgent

MAX_CARD_BYTES = 256 * 1024
MAX_SKILLS = 32
MAX_TEXT = 2_000
TIMEOUT_S = 15.0


class CardError(Exception):
    """The card could not be fetched or is not an A2A agent card."""


def card_url(base_url: str) -> str:
    return base_url.rstrip("/") + AGENT_CARD_WELL_KNOWN_PATH


async def fetch(base_url: str, headers: dict[str, str]) -> dict[str, Any]:
    """The summary of the agent card at ``base_url`` (``CardError`` for anything else)."""
    url = card_url(base_url)
    try:
        security.check_outbound_url(url)
    except security.OutboundURLError as exc:
        raise CardError(f"refused to fetch {url}: {exc.detail}") from None
    try:
        async with (
            httpx.AsyncClient(
                headers=headers,
                timeout=TIMEOUT_S,
                transport=checked_http.httpx_transports()[1],
                trust_env=False,
                follow_redirects=False,
            ) as http,
            http.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise CardError(f"{url} answered HTTP {response.status_code}")
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_CARD_BYTES:
                    raise CardError(f"the card is over {MAX_CARD_BYTES // 1024} KiB")
    except httpx.HTTPError as exc:
        raise CardError(f"could not fetch {url}: {str(exc)[:300] or type(exc).__name__}") from None
    return summary(_parse(body))


def _parse(body: bytes) -> AgentCard:
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise CardError("the card is not JSON") from None
    if not isinstance(data, dict):
        raise CardError("the card is not a JSON object")
    try:
        return parse_agent_card(data)
    except Exception as exc:  # protobuf's ParseError, or the SDK's own checks
        raise CardError(f"not an A2A agent card: {str(exc)[:300]}") from None


def summary(card: AgentCard) -> dict[str, Any]:
    """What Studio keeps of ``card``: plain text, cut to size."""
    if not card.name:
        raise CardError("not an A2A agent card: it has no name")
    return {
        "name": _text(card.name, 200),
        "description": _text(card.description),
        "version": _text(card.version, 100),
        "streaming": bool(card.capabilities.streaming),
        "skills": [
            {
                "name": _text(skill.name or skill.id, 200),
                "description": _text(skill.description),
                "tags": [_text(tag, 100) for tag in list(skill.tags)[:16]],
            }
            for skill in list(card.skills)[:MAX_SKILLS]
        ],
    }


def _text(value: str, limit: int = MAX_TEXT) -> str:
    return "".join(c for c in value if c.isprintable() or c in "\n\t")[:limit]


def refresh(remote: RemoteAgent) -> RemoteAgent:
    """Fetch ``remote``'s card now and store it, or the reason it could not be had
    (the last good card stays). Blocking: for views and the API."""
    headers = remote.headers()
    try:
        card = async_to_sync(fetch)(remote.url, headers)
    except CardError as exc:
        remote.card_error = security.redact(str(exc), list(headers.values()))[:500]
    else:
        remote.card, remote.card_error = card, ""
    remote.card_fetched_at = timezone.now()
    remote.save(update_fields=["card", "card_error", "card_fetched_at", "updated_at"])
    return remote
