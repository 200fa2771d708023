"""The pages of sessions: the playground (chat with an agent), the session list and a
session's live timeline. Messages, cancels and decisions go through the REST API."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import DurationField, ExpressionWrapper, F, Sum
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import json_script
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_POST

from studio import services
from studio.api import serializers as s
from studio.api import session_serializers as ss
from studio.models import AgentVersion, Event, IngestedTrace, Run, Session, payload_texts
from studio.services import forks
from studio.web import artifacts, datasets
from studio.web.forms import SessionFilterForm
from studio.web.owned import agent_summary, owned_agents, owned_sessions, uuid_or_none
from studio.web.replays import Version, replay_context

SESSIONS_PER_PAGE = 25
TIMELINE_PAGE_SIZE = 250
"""Events the timeline loads at first (the newest) and per "load earlier" click."""
TIMELINE_RUNS = 100
FORK_VERSIONS = 50
"""Versions of the session's agent a fork may go on with, newest first."""
MAX_TREE_INDENT = 6


# Playground


@login_required
@require_GET
def playground(request: HttpRequest) -> HttpResponse:
    agents = [agent_summary(a) for a in owned_agents(request)]
    session = None
    if (session_id := uuid_or_none(request.GET.get("session"))) is not None:
        session = owned_sessions(request).filter(pk=session_id).first()
    agent_id = uuid_or_none(request.GET.get("agent"))
    if session is not None and session.agent_version is not None:
        agent_id = session.agent_version.agent_id
    known = {a["id"] for a in agents}
    selected = str(agent_id) if agent_id and str(agent_id) in known else None
    data = {
        "agents": agents,
        "agent_id": selected or (agents[0]["id"] if agents else None),
        "session": ss.SessionSerializer(session).data if session else None,
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


@login_required
@require_GET
def session_list(request: HttpRequest) -> HttpResponse:
    filters = SessionFilterForm(request.GET, owner=request.user)  # type: ignore[arg-type]
    # The list never shows a session's state, which can be large JSON: not loaded. An
    # ingested session's agent is its trace's (one join, not a query a row).
    sessions = owned_sessions(request).defer("state").select_related("ingested__agent")
    paginator = Paginator(filters.filter(sessions), SESSIONS_PER_PAGE)
    page = paginator.get_page(request.GET.get("page"))
    figures = _run_figures([session.pk for session in page.object_list])
    links = _SessionLinks()
    query = request.GET.copy()
    query.pop("page", None)
    sort = query.get("sort", "")
    by_cost = query.copy()
    by_cost["sort"] = "cost" if sort == "-cost" else "-cost"  # costliest first, then back
    return render(
        request,
        "studio/session_list.html",
        {
            "section": "sessions",
            "filters": filters,
            "page": page,
            "query": query.urlencode(),
            "sort": sort,
            "sort_by_cost": by_cost.urlencode(),
            "here": request.get_full_path(),
            "rows": [
                (session, figures.get(session.pk), links(session.pk))
                for session in page.object_list
            ],
        },
    )


class _SessionLinks:
    """A row's links (its timeline, waterfall and delete action), each route reversed
    once a page and filled in with the row's pk: reversing is ~10 us a call, three a
    row, a sixth of the list's template time."""

    _SAMPLE = UUID(int=0)
    _ROUTES = {"timeline": "session-timeline", "waterfall": "session-waterfall",
               "delete": "session-delete"}  # fmt: skip

    def __init__(self) -> None:
        self._urls = {key: reverse(name, args=[self._SAMPLE]) for key, name in self._ROUTES.items()}

    def __call__(self, pk: UUID) -> dict[str, str]:
        sample, value = str(self._SAMPLE), str(pk)
        return {key: url.replace(sample, value) for key, url in self._urls.items()}


def _run_figures(session_ids: list[UUID]) -> dict[UUID, dict[str, Any]]:
    """Per session of a page: the time its ended runs took, and their tokens."""
    wall = ExpressionWrapper(F("ended_at") - F("created_at"), output_field=DurationField())
    rows = (
        Run.objects.filter(session_id__in=session_ids)
        .values("session_id")
        .annotate(duration=Sum(wall), input=Sum("input_tokens"), output=Sum("output_tokens"))
    )
    return {
        row["session_id"]: {
            "duration": row["duration"],
            "input": row["input"],
            "output": row["output"],
        }
        for row in rows
    }


TIMELINE_DECISIONS = 50
"""The approval decisions (audit trail) the timeline's side shows, oldest first."""


@login_required
@require_GET
def session_timeline(request: HttpRequest, pk: UUID) -> HttpResponse:
    session = get_object_or_404(owned_sessions(request), pk=pk)
    runs = list(Run.objects.filter(session=session).order_by("-created_at")[:TIMELINE_RUNS])
    ingested = IngestedTrace.objects.select_related("agent").filter(session=session).first()
    versions = _versions(session)
    data = {
        "session": ss.SessionSerializer(session).data,
        "runs": s.RunSerializer(list(reversed(runs)), many=True).data,
        "page_size": TIMELINE_PAGE_SIZE,
        "urls": {
            **_live_urls(),
            "waterfall": reverse("session-waterfall", args=[session.pk]),
            "artifacts": reverse("session-artifacts", args=[session.pk]),
            "forks": reverse("api-session-forks", args=[session.pk]),
            "continue": reverse("api-session-continue", args=[session.pk]),
        },
        "versions": [
            {"number": v.number, "note": v.note, "current": v.pk == session.agent_version_id}
            for v in versions
        ],
        "fork": {"resumable": forks.can_go_on_without_message(session, runs[0] if runs else None)},
        # an agent that runs elsewhere: no pause, cancel, resume, fork or replay here
        "ingested": ingested is not None,
    }
    # Indented by depth, at most MAX_TREE_INDENT steps (studio.css: .fork-tree .depth-N).
    rows = forks.tree_rows(forks.fork_tree(session))
    tree = [(row, min(depth, MAX_TREE_INDENT)) for row, depth in rows]
    return render(
        request,
        "studio/session_timeline.html",
        {
            "section": "sessions",
            "session": session,
            "data": _timeline_script(data, _newest_events(session)),
            "artifacts": artifacts.panel(session),
            "decisions": session.approval_decisions.order_by("decided_at")[:TIMELINE_DECISIONS],
            "latest_run": runs[0] if runs else None,  # "Compare with…" starts from it
            "origin_run": _origin_run(runs[0]) if runs else None,
            "fork_tree": tree if len(tree) > 1 else [],
            "fork_children": [row for row, depth in tree if row.parent_id == session.pk],
            "ingested": ingested,
            **replay_context(session, versions),
            **datasets.turn_panel(request, session, _ended(runs)),
        },
    )


def _origin_run(run: Run) -> Run | None:
    """The run a fork's or a replay's ``run`` goes back to (through the runs it resumed),
    which it is compared with."""
    seen: set[UUID] = set()
    at: Run | None = run
    while at is not None and at.pk not in seen:
        seen.add(at.pk)
        if at.replay_of_id is not None:
            return at.replay_of
        if at.copied_from_id is not None:
            return at.copied_from
        at = at.resumed_from
    return None


def _versions(session: Session) -> list[Version]:
    """The versions of the session's agent, newest first: those a fork of it may go on
    with, and a run of it be replayed with (one read for both)."""
    if session.agent_version is None:
        return []
    rows = AgentVersion.objects.filter(agent_id=session.agent_version.agent_id)
    picked = rows.order_by("-number").values_list("pk", "number", "note")[:FORK_VERSIONS]
    return [Version(*row) for row in picked]


def _ended(runs: list[Run]) -> list[Run] | None:
    """The ended runs among ``runs`` (the session's newest, newest first) when those are
    all of the session's runs; ``None`` (read them) when there may be older ones."""
    if len(runs) >= TIMELINE_RUNS:
        return None
    return [run for run in runs if run.ended_at is not None]


@login_required
@require_GET
def session_artifacts(request: HttpRequest, pk: UUID) -> HttpResponse:
    """The session page's Artifacts panel alone: the page swaps it in when a tool saves."""
    session = get_object_or_404(owned_sessions(request), pk=pk)
    context = {"session": session, "artifacts": artifacts.panel(session)}
    return render(request, "studio/_artifacts.html", context)


def _newest_events(session: Session) -> str:
    """The newest page of stored events as a JSON array of their wire JSON, up to the
    session's ``last_seq`` as read with it (the page's websocket continues after the
    last one), so the timeline renders without waiting for the socket. The payloads are
    read as JSON text and go into the page as they are: no decoding 250 of them into
    Python only to encode them again."""
    after = max(0, session.last_seq - TIMELINE_PAGE_SIZE)
    rows = Event.objects.filter(session=session, seq__gt=after, seq__lte=session.last_seq)
    return f"[{','.join(payload_texts(rows.order_by('seq')))}]"


def _timeline_script(data: dict[str, Any], events: str) -> SafeString:
    """``data|json_script:"timeline-data"`` with an ``events`` member that is JSON text
    already (``_newest_events``), joined in by the encoder, so that Django's
    ``json_script`` still escapes the whole (no text in it can end the element). The
    page reads it as data (``readJsonScript``) and writes every event as text."""

    class WithEvents(DjangoJSONEncoder):
        def encode(self, o: Any) -> str:
            return f'{super().encode(o)[:-1]}, "events": {events}}}'

    return json_script(data, "timeline-data", encoder=WithEvents)


@login_required
@require_POST
def session_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    session = get_object_or_404(owned_sessions(request), pk=pk)
    services.delete_session(session)
    messages.success(request, f"Deleted session {session.title or session.pk}.")
    back = request.POST.get("next", "")
    if url_has_allowed_host_and_scheme(back, {request.get_host()}) and back.startswith("/"):
        return HttpResponseRedirect(back)
    return redirect("sessions")
