"""The waterfall of a session: its runs' spans on a time axis, live (``agents_core.spans``).

The page comes with the session's runs; its script reads the spans of the runs it shows
from the spans API and follows the session's websocket from the session's ``last_seq``
as read after the runs (so a run read as ended has every event it stored in the spans
read later, and a run that ended since is told by the socket's status).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from studio import wire
from studio.models import Run, Session
from studio.web.owned import owned_sessions, uuid_or_none

WATERFALL_RUNS = 100
"""A session's waterfall lists its newest runs, at most this many."""


@login_required
@require_GET
def session_waterfall(request: HttpRequest, pk: UUID) -> HttpResponse:
    session = get_object_or_404(owned_sessions(request), pk=pk)
    focus = _focused_run(request, session)
    if focus is not None:
        runs = [focus]
    else:
        runs = list(reversed(session.runs.order_by("-created_at")[:WATERFALL_RUNS]))
    last_seq = Session.objects.values_list("last_seq", flat=True).get(pk=session.pk)
    shown = focus or (runs[-1] if runs else None)  # the run open at first
    data = {
        "session": {"id": str(session.pk), "title": session.title, "status": session.status},
        "runs": [wire.run_payload(run) for run in runs],
        "focus": str(focus.pk) if focus is not None else None,
        "more_runs": focus is None and session.runs.count() > len(runs),
        "last_seq": last_seq,
        "urls": _urls(session),
    }
    return render(
        request,
        "studio/session_waterfall.html",
        {
            "section": "sessions",
            "session": session,
            "focus": focus,
            "data": data,
            # Its spans are requested as the page loads, before its script asks for them.
            "preload": reverse("run-spans", args=[shown.pk]) if shown else None,
        },
    )


def _focused_run(request: HttpRequest, session: Session) -> Run | None:
    """The run ``?run=<id>`` (or ``?invocation=<id>``, as the timeline's links say)
    names, of this session only; ``None`` when the page shows every run."""
    run_id, invocation = request.GET.get("run"), request.GET.get("invocation")
    if not run_id and not invocation:
        return None
    runs = session.runs.all()
    key = uuid_or_none(run_id)
    if key is not None:
        found = runs.filter(pk=key).first()
    else:
        found = None if run_id else runs.filter(invocation_id=invocation).first()
    if found is None:
        raise Http404("No such run in this session.")
    return found


def _urls(session: Session) -> dict[str, Any]:
    return {
        "timeline": reverse("session-timeline", args=[session.pk]),
        "waterfall": reverse("session-waterfall", args=[session.pk]),
        "runs": reverse("run-list"),
    }
