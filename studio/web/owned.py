"""What every page reads of the signed-in user's own objects: only theirs, ever."""

from __future__ import annotations

import re
from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from django.http import HttpRequest

from studio.models import Agent, Session

_SUGGESTION = re.compile(r"\bTry:\s*(.+?)\s*$")


def owned_agents(request: HttpRequest) -> QuerySet[Agent]:
    return Agent.objects.filter(owner_id=request.user.pk).select_related("current_version")


def agent_summary(agent: Agent) -> dict[str, Any]:
    spec = agent.spec or {}
    found = _SUGGESTION.search(agent.description)
    return {
        "id": str(agent.id),
        "name": agent.name,
        "description": agent.description,
        "type": spec.get("type", "llm"),
        "version": agent.current_version.number if agent.current_version else None,
        "tools": [tool.get("name", "") for tool in spec.get("tools", [])],
        "sub_agents": len(spec.get("sub_agents", [])),
        "suggestion": found.group(1) if found else "",
    }


def owned_sessions(request: HttpRequest) -> QuerySet[Session]:
    return Session.objects.filter(owner_id=request.user.pk).select_related("agent_version__agent")


def uuid_or_none(value: Any) -> UUID | None:
    if not value:
        return None
    try:
        return UUID(str(value))
    except ValueError:
        return None
