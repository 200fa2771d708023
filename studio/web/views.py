"""Server-rendered pages. Each page renders its shell and the data its script needs
(through ``json_script``); writes go through the REST API, so the pages and API clients
share one set of validation rules and error shapes. The few form posts here (delete,
duplicate) call ``studio.services`` like the API does."""

from __future__ import annotations

import json
import re
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import ValidationError

from agents_core.specs import NAME_PATTERN
from studio import services
from studio.agents.tools import tool_registry
from studio.api import serializers as s
from studio.api.exceptions import error_body
from studio.errors import ConflictError, InvalidInputError
from studio.models import Agent, Event, ModelConfig, Run, Session
from studio.web.forms import AgentSearchForm, SessionFilterForm

SESSIONS_PER_PAGE = 25
TIMELINE_PAGE_SIZE = 250
"""Events the timeline loads at first (the newest) and per "load earlier" click."""
TIMELINE_RUNS = 100
_SUGGESTION = re.compile(r"\bTry:\s*(.+?)\s*$")


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _owned_agents(request: HttpRequest) -> QuerySet[Agent]:
    return Agent.objects.filter(owner_id=request.user.pk).select_related("current_version")


def _agent_summary(agent: Agent) -> dict[str, Any]:
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


# Home


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    agents = [_agent_summary(agent) for agent in _owned_agents(request)]
    sessions = Session.objects.filter(owner_id=request.user.pk).select_related(
        "agent_version__agent"
    )[:6]
    return render(
        request,
        "studio/home.html",
        {"section": "home", "agents": agents, "sessions": sessions},
    )


# Agents


@login_required
@require_GET
def agent_list(request: HttpRequest) -> HttpResponse:
    search = AgentSearchForm(request.GET)
    agents = [_agent_summary(a) for a in search.filter(_owned_agents(request))]
    return render(
        request,
        "studio/agent_list.html",
        {"section": "agents", "agents": agents, "search": search},
    )


@login_required
@require_GET
def agent_builder(request: HttpRequest, pk: UUID | None = None) -> HttpResponse:
    agent = get_object_or_404(_owned_agents(request), pk=pk) if pk else None
    others = {
        a.name: a.spec for a in _owned_agents(request) if a.spec and (agent is None or a != agent)
    }
    data = {
        "agent": s.AgentSerializer(agent).data if agent else None,
        "models": list(
            ModelConfig.objects.filter(owner_id=request.user.pk).values_list("name", flat=True)
        ),
        "tools": [
            {"name": e.name, "description": e.description, "settings_schema": e.settings_schema()}
            for e in tool_registry(request.user.pk)
        ],
        "agents": others,
        "name_pattern": NAME_PATTERN,
        "urls": {
            "agents": reverse("agent-list"),
            "validate": reverse("agent-validate"),
            "builder": reverse("agent-new"),
            "playground": reverse("playground"),
        },
    }
    title = agent.name if agent else "New agent"
    return render(
        request,
        "studio/agent_builder.html",
        {"section": "agents", "agent": agent, "title": title, "builder_data": data},
    )


@login_required
@require_POST
def agent_validate(request: HttpRequest) -> JsonResponse:
    """The builder's live check: the API's validation of an agent, without saving.
    Answers ``{"errors": [...]}`` in the API's error format (empty when valid)."""
    try:
        payload = json.loads(request.body)
    except ValueError:
        payload = None
    if not isinstance(payload, dict):
        problem = {"path": "", "code": "invalid", "detail": "send a JSON object"}
        return JsonResponse({"errors": [problem]}, status=400)
    instance = None
    if (agent_id := _uuid_or_none(payload.get("id"))) is not None:
        instance = _owned_agents(request).filter(pk=agent_id).first()
    data = {k: payload[k] for k in ("name", "description", "spec") if k in payload}
    serializer = s.AgentSerializer(instance, data=data, context={"request": request})
    if serializer.is_valid():
        return JsonResponse({"errors": []})
    return JsonResponse({"errors": error_body(ValidationError(serializer.errors))["errors"]})


def _uuid_or_none(value: Any) -> UUID | None:
    if not value:
        return None
    try:
        return UUID(str(value))
    except ValueError:
        return None


@login_required
@require_POST
def agent_duplicate(request: HttpRequest, pk: UUID) -> HttpResponse:
    agent = get_object_or_404(_owned_agents(request), pk=pk)
    name = _free_name(request, agent.name)
    spec = {**(agent.spec or {}), "name": name}
    try:
        copy = services.create_agent(
            request.user,  # type: ignore[arg-type]  # login_required: a real user
            name=name,
            description=agent.description,
            spec=spec,
            note=f"duplicated from {agent.name}",
        )
    except InvalidInputError as exc:
        messages.error(request, f"Could not duplicate {agent.name}: {exc.message}")
        return redirect("agents")
    messages.success(request, f"Duplicated {agent.name} as {copy.name}.")
    return redirect("agent-edit", pk=copy.pk)


def _free_name(request: HttpRequest, name: str) -> str:
    taken = set(_owned_agents(request).values_list("name", flat=True))
    for n in range(1, 1000):
        suffix = "_copy" if n == 1 else f"_copy{n}"
        candidate = f"{name[: 64 - len(suffix)]}{suffix}"
        if candidate not in taken:
            return candidate
    return f"{name[:50]}_{len(taken)}"


@login_required
@require_POST
def agent_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    agent = get_object_or_404(_owned_agents(request), pk=pk)
    try:
        services.delete_agent(agent)
    except ConflictError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted agent {agent.name}.")
    return redirect("agents")


# Models


@login_required
@require_GET
def model_list(request: HttpRequest) -> HttpResponse:
    configs = ModelConfig.objects.filter(owner_id=request.user.pk)
    return render(request, "studio/model_list.html", {"section": "models", "configs": configs})


@login_required
@require_GET
def model_edit(request: HttpRequest, pk: UUID | None = None) -> HttpResponse:
    config = get_object_or_404(ModelConfig, owner_id=request.user.pk, pk=pk) if pk else None
    data = {
        "config": s.ModelConfigSerializer(config).data if config else None,
        "urls": {"models": reverse("modelconfig-list"), "list": reverse("models")},
    }
    return render(
        request,
        "studio/model_edit.html",
        {
            "section": "models",
            "config": config,
            "providers": ModelConfig.Provider.choices,
            "options_json": json.dumps(config.options if config else {}, indent=2),
            "model_data": data,
        },
    )


@login_required
@require_POST
def model_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    config = get_object_or_404(ModelConfig, owner_id=request.user.pk, pk=pk)
    try:
        services.delete_model_config(config)
    except ConflictError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Deleted model {config.name}.")
    return redirect("models")


# Playground


@login_required
@require_GET
def playground(request: HttpRequest) -> HttpResponse:
    agents = [_agent_summary(a) for a in _owned_agents(request)]
    session = None
    if (session_id := _uuid_or_none(request.GET.get("session"))) is not None:
        session = _owned_sessions(request).filter(pk=session_id).first()
    agent_id = _uuid_or_none(request.GET.get("agent"))
    if session is not None and session.agent_version is not None:
        agent_id = session.agent_version.agent_id
    known = {a["id"] for a in agents}
    selected = str(agent_id) if agent_id and str(agent_id) in known else None
    data = {
        "agents": agents,
        "agent_id": selected or (agents[0]["id"] if agents else None),
        "session": s.SessionSerializer(session).data if session else None,
        "urls": _live_urls(),
    }
    return render(request, "studio/playground.html", {"section": "playground", "data": data})


def _live_urls() -> dict[str, str]:
    return {
        "sessions": reverse("session-list"),
        "runs": reverse("run-list"),
        "timeline": reverse("sessions"),
        "playground": reverse("playground"),
        "builder": reverse("agents"),
    }


# Sessions


def _owned_sessions(request: HttpRequest) -> QuerySet[Session]:
    return Session.objects.filter(owner_id=request.user.pk).select_related("agent_version__agent")


@login_required
@require_GET
def session_list(request: HttpRequest) -> HttpResponse:
    filters = SessionFilterForm(request.GET, owner=request.user)  # type: ignore[arg-type]
    # The list never shows a session's state, which can be large JSON: not loaded.
    sessions = _owned_sessions(request).defer("state")
    paginator = Paginator(filters.filter(sessions), SESSIONS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "studio/session_list.html",
        {
            "section": "sessions",
            "filters": filters,
            "page": page,
            "query": query.urlencode(),
            "here": request.get_full_path(),
        },
    )


@login_required
@require_GET
def session_timeline(request: HttpRequest, pk: UUID) -> HttpResponse:
    session = get_object_or_404(_owned_sessions(request), pk=pk)
    runs = list(Run.objects.filter(session=session).order_by("-created_at")[:TIMELINE_RUNS])
    data = {
        "session": s.SessionSerializer(session).data,
        "runs": s.RunSerializer(list(reversed(runs)), many=True).data,
        "events": _newest_events(session),
        "page_size": TIMELINE_PAGE_SIZE,
        "urls": _live_urls(),
    }
    return render(
        request,
        "studio/session_timeline.html",
        {"section": "sessions", "session": session, "data": data},
    )


def _newest_events(session: Session) -> list[dict[str, Any]]:
    """The newest page of stored events as their wire JSON, up to the session's
    ``last_seq`` as read with it (the page's websocket continues after the last one), so
    the timeline renders without waiting for the socket. They reach the page as data
    (``json_script``), and the page writes them as text."""
    after = max(0, session.last_seq - TIMELINE_PAGE_SIZE)
    rows = Event.objects.filter(session=session, seq__gt=after, seq__lte=session.last_seq)
    return list(rows.order_by("seq").values_list("payload", flat=True))


@login_required
@require_POST
def session_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    session = get_object_or_404(_owned_sessions(request), pk=pk)
    services.delete_session(session)
    messages.success(request, f"Deleted session {session.title or session.pk}.")
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, {request.get_host()}) and back.startswith("/"):
        return HttpResponseRedirect(back)
    return redirect("sessions")
