"""A run ingested over OTLP is the record of an agent that runs elsewhere: the API
refuses every control action on it with 409 ``run_ingested`` (pause, resume, cancel,
resume from the last step, fork, continue, replay, a new message) and stores nothing,
while every read (timeline, waterfall, spans, diff, bundle export) works; deleting it
is still the owner's to do."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from studio.models import IngestedTrace, Run, RunStatus, Session
from tests.studio.conftest import signed_in
from tests.studio.test_otlp_ingest import post, token_for
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of

# Committed, not in a test's transaction: the view's ORM work runs through
# ``database_sync_to_async``, which closes the connection a test's transaction holds on
# PostgreSQL (these tests run there too, ``PG_TESTS``).
pytestmark = pytest.mark.django_db(transaction=True)


def ingest(owner: User, *, finished: bool) -> IngestedTrace:
    """A trace of ``owner``'s: finished (its root came), or still running (a child only)."""
    spans = agent_trace(new_trace_id())
    body = request_of(*(spans if finished else spans[1:2])).SerializeToString()
    assert post(body, token_for(owner, f"exporter {new_trace_id()[:6]}")).status_code == 200
    return IngestedTrace.objects.select_related("session", "run").latest("created_at")


def refused(answer: Any) -> None:
    assert answer.status_code == 409, answer.content
    body = answer.json()
    assert body["code"] == "run_ingested"
    assert "runs elsewhere" in body["detail"]


def test_a_running_ingested_run_cannot_be_paused_cancelled_resumed_or_sent_to(
    api: APIClient, ada: User
) -> None:
    trace = ingest(ada, finished=False)
    run, session = trace.run, trace.session
    assert run.status == RunStatus.RUNNING
    for action in ("pause", "cancel", "resume", "resume-from-last-step"):
        refused(api.post(f"/api/runs/{run.pk}/{action}/"))
    refused(api.post(f"/api/sessions/{session.pk}/messages/", {"text": "go on"}, format="json"))
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING and run.error_code == ""
    assert Run.objects.filter(session=session).count() == 1


def test_a_finished_ingested_run_cannot_be_forked_continued_or_replayed(
    api: APIClient, ada: User
) -> None:
    trace = ingest(ada, finished=True)
    run, session = trace.run, trace.session
    assert run.status == RunStatus.SUCCEEDED
    sessions = Session.objects.count()
    refused(api.post(f"/api/runs/{run.pk}/replay/", {}, format="json"))
    fork = {"seq": 1, "go_on": False}
    refused(api.post(f"/api/sessions/{session.pk}/forks/", fork, format="json"))
    refused(api.post(f"/api/sessions/{session.pk}/continue/", {}, format="json"))
    assert Session.objects.count() == sessions  # no replay, no fork kept


def test_reading_an_ingested_run_still_works(api: APIClient, ada: User) -> None:
    trace = ingest(ada, finished=True)
    other = ingest(ada, finished=True)
    run, session = trace.run, trace.session
    assert api.get(f"/api/sessions/{session.pk}/events/").status_code == 200
    assert api.get(f"/api/runs/{run.pk}/spans/").status_code == 200
    compared = api.get(f"/api/runs/compare/?a={run.pk}&b={other.run.pk}")
    assert compared.status_code == 200, compared.content
    bundle = api.get(f"/api/sessions/{session.pk}/bundle/")
    assert bundle.status_code == 200 and bundle.json()["events"]
    page = signed_in(ada)
    assert page.get(f"/sessions/{session.pk}/").status_code == 200
    assert page.get(f"/sessions/{session.pk}/waterfall/").status_code == 200


def test_deleting_a_running_ingested_session_needs_no_cancel(api: APIClient, ada: User) -> None:
    trace = ingest(ada, finished=False)
    answer = api.delete(f"/api/sessions/{trace.session.pk}/")
    assert answer.status_code == 204, answer.content
    assert not Session.objects.filter(pk=trace.session.pk).exists()


def test_the_timeline_of_an_ingested_run_offers_no_control(ada: User) -> None:
    trace = ingest(ada, finished=False)
    html = signed_in(ada).get(f"/sessions/{trace.session.pk}/").content.decode()
    assert "ingested · read-only" in html
    assert "Continue in playground" not in html
    assert 'id="replay-run"' not in html
    assert '"ingested": true' in html  # the page script hides pause, cancel, resume and fork


def test_the_session_list_names_an_ingested_sessions_agent_and_offers_no_continue(
    ada: User,
) -> None:
    trace = ingest(ada, finished=True)
    page = signed_in(ada).get("/sessions/").content.decode()
    row = page[page.index(f'data-session="{trace.session.pk}"') :]
    row = re.sub(r"\s+", " ", row[: row.index("</tr>")])
    assert re.search(r"<td>shopper <span [^>]*>external</span></td>", row)
    assert [m for m in re.findall(r'class="btn small[^"]*"[^>]*>(\w+)<', row)] == [
        "Waterfall",
        "Delete",
    ]
    assert 'data-testid="cost">—<' in row  # no call's cost is known: not "≥ $0.00"


def test_the_sessions_api_names_an_ingested_sessions_external_agent(
    api: APIClient, ada: User
) -> None:
    trace = ingest(ada, finished=True)
    (listed,) = api.get("/api/sessions/").json()["results"]
    one = api.get(f"/api/sessions/{trace.session.pk}/").json()
    for body in (listed, one):
        assert (body["agent"], body["agent_name"]) == (None, None)  # no agent of Studio's
        assert body["external_agent"] == "shopper"
