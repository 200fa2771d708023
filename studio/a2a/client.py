"""The ``a2a`` tool entry: remote A2A agents a Studio agent may call like tools.

A remote agent is registered as a ``RemoteAgent`` of its owner, on the remote agents
page or the API: its name, its A2A base URL (where its card is, under
``/.well-known/``) and the token it takes, kept encrypted and never shown. A spec then
names it in the ``a2a`` tool's settings::

    {"name": "a2a", "settings": {"servers": ["billing"]}}

which gives the agent a tool ``a2a_billing``, described by the registration's
description (else its card's), that asks the remote agent (``agents_core.tools.a2a``).

Every request goes where the model and MCP clients' go: the URL (and the one the card
names for messages) must pass ``studio.security.check_outbound_url`` before each call,
and the connection goes only to an address that passed (``studio.checked_http``), with
no redirect followed. The stored header values are removed from whatever the remote
sends back before the run sees it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agents_core import specs as core_specs
from agents_core.exceptions import ConfigurationError, ToolExecutionError
from agents_core.tools.base import BaseTool
from studio import checked_http, security
from studio.models import RemoteAgent

if TYPE_CHECKING:
    import httpx

MAX_AGENTS = 8
DESCRIPTION = "Call remote agents over A2A: each one a tool (register them on Remote agents)."
TOOL_PREFIX = "a2a_"


ServerName = Annotated[str, Field(min_length=1, max_length=64)]
"""Checked against ``NAME_PATTERN`` by the model, so the schema the builder shows
carries no regular expression (its rules are said in words)."""


class A2aToolSettings(BaseModel):
    # Flat (a list of names), so the builder's settings form draws it: one name a line.
    model_config = ConfigDict(extra="forbid")

    servers: Annotated[list[ServerName], Field(min_length=1, max_length=MAX_AGENTS)] = Field(
        title="Remote agents",
        description="Names of your remote A2A agents (the Remote agents page), one a line: "
        "each becomes a tool a2a_<name>.",
    )

    @model_validator(mode="after")
    def _distinct(self) -> A2aToolSettings:
        if bad := [
            name for name in self.servers if not re.fullmatch(core_specs.NAME_PATTERN, name)
        ]:
            raise ValueError(f"{bad[0]!r} is not a server name: {core_specs.NAME_RULE}")
        if len(set(self.servers)) != len(self.servers):
            raise ValueError("a remote agent is listed twice")
        return self


def known_servers(owner_id: Any) -> set[str]:
    """The names ``servers`` may list: the owner's remote agents."""
    return set(
        RemoteAgent.objects.filter(owner_id=owner_id).values_list("name", flat=True).order_by()
    )


OWNER_SETTINGS_KEPT = 256
"""Owners whose a2a settings class is kept (``settings_model``)."""


@functools.lru_cache(maxsize=OWNER_SETTINGS_KEPT)
def settings_model(owner_id: object | None) -> type[A2aToolSettings]:
    """The settings, checking for an owner that each ``server`` is one of theirs.

    One class per owner, kept: every run builds its tool registry, and making a pydantic
    class costs ~0.5 ms (a worker's run spent 1.2% of its CPU on it). What the class
    reads of the owner's remote agents it reads when it validates or draws its schema,
    so a kept class is never stale."""
    if owner_id is None:
        return A2aToolSettings

    def yours(schema: dict[str, Any]) -> None:
        """The builder's form says which names the owner may list (read when drawn)."""
        known = sorted(known_servers(owner_id))
        mine = f"Yours: {', '.join(known)}." if known else "You have none registered yet."
        field = schema.get("properties", {}).get("servers", {})
        field["description"] = f"{field.get('description', '')} {mine}".strip()

    class OwnerA2aToolSettings(A2aToolSettings):
        model_config = ConfigDict(extra="forbid", json_schema_extra=yours)

        @model_validator(mode="after")
        def _known(self) -> OwnerA2aToolSettings:
            known = known_servers(owner_id)
            if missing := sorted(set(self.servers) - known):
                listed = ", ".join(sorted(known)) or "none registered"
                raise ValueError(f"no remote agent named {', '.join(missing)} ({listed})")
            return self

    return OwnerA2aToolSettings


def a2a_tools(owner_id: Any, chosen: A2aToolSettings) -> list[BaseTool]:
    """The tools of ``chosen``, for ``owner_id``'s run; nothing connects until a call."""
    from agents_core.tools.a2a import A2aAgentTool, A2aRemote

    rows = {
        row.name: row
        for row in RemoteAgent.objects.filter(owner_id=owner_id, name__in=chosen.servers)
    }
    tools: list[BaseTool] = []
    for name in chosen.servers:
        row = rows.get(name)
        if row is None:
            raise ConfigurationError(f"a2a: no remote agent named {name!r}")
        headers = row.headers()
        secrets = list(headers.values())
        remote = A2aRemote(
            url=row.url, headers=headers, timeout_s=settings.STUDIO_A2A_CALL_TIMEOUT_S
        )
        tools.append(
            A2aAgentTool(
                remote,
                name=TOOL_PREFIX + name,
                description=row.shown_description,
                http_transport=_transport,
                url_check=check_url,
                redact=_redactor(secrets),
            )
        )
    return tools


def check_url(url: str) -> None:
    """``ToolExecutionError`` unless Studio may send requests to ``url`` now."""
    try:
        security.check_outbound_url(url)
    except security.OutboundURLError as exc:
        raise ToolExecutionError(f"refused to call the A2A agent at {url}: {exc.detail}") from None


def _transport() -> httpx.AsyncBaseTransport:
    return checked_http.httpx_transports()[1]


def _redactor(secrets: Sequence[str]) -> Any:
    def redact(text: str) -> str:
        return security.redact(text, secrets)

    return redact
