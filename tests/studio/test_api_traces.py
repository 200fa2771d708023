"""The spans API: a run's and a session's spans, open ones while a run waits, owner
scoping, and sessions stored before spans (schema version 1) upgraded to draw."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.apps import apps
from django.contrib.auth.models import User

from agents_core import events as core_events
from studio.asgi import application
from studio.models import Event, Run, RunSpans, Session
from tests.studio.conftest import client_for, make_agent, make_session
from tests.support.live import eventually, run_manager, watch  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.django_db(transaction=True)

CALCULATOR = "Use the calculator.\nResult: The answer is {last_tool_result}."


@sync_to_async
def careful_session(owner: User) -> Session:
    tools = [{"name": "calculator", "requires_approval": True}]
    return make_session(owner, make_agent(owner, "careful", instruction=CALCULATOR, tools=tools))


def get(user: User, path: str) -> Any:
    response = client_for(user).get(path)
    assert response.status_code == 200, response.content
    return response.json()


def kinds(spans: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(s["kind"], s["name"], s["status"]) for s in spans]


async def test_a_waiting_run_has_open_spans_and_a_finished_one_closes_them(
    ada: User, bob: User
) -> None:
    session = await careful_session(ada)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 2 + 3?"})
    await viewer.until(lambda v: v.status is not None and v.status["waiting_for"] == "approval")

    async def parked() -> Run | None:  # its execution let go: it waits on the person
        return await Run.objects.filter(session=session, status="waiting").afirst()

    run = await eventually(parked)
    live = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    assert live["run"]["status"] == "waiting"
    assert kinds(live["spans"]) == [
        ("agent", "careful", "ok"),  # ended where the run parked, until it goes on
        ("model", "model", "ok"),
        ("tool", "calculator", "open"),
        ("human", "approval", "open"),
    ]
    assert live["spans"][0]["attributes"]["parked"] is True
    assert all(s["end"] is None for s in live["spans"] if s["status"] == "open")
    tool, wait = live["spans"][2], live["spans"][3]
    assert wait["parent_span_id"] == tool["span_id"]
    assert tool["attributes"]["arguments"] == {"expression": "2 + 3"}

    [request] = viewer.events_of_type("approval_request")
    approval = request["approval"]
    await viewer.send(
        {
            "type": "approval",
            "call_id": approval["call_id"],
            "args_hash": approval["args_hash"],
            "decision": "approve",
        }
    )
    await viewer.until_ended()
    assert await RunSpans.objects.filter(run=run).aexists()  # kept as the run ended
    done = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    assert [s["status"] for s in done["spans"]] == ["ok"] * 5
    assert done["spans"][2]["attributes"]["result"] == "5"
    assert done["spans"][3]["attributes"]["decided_by"] == "ada"
    model = done["spans"][1]
    assert model["input_tokens"] > 0 and model["start_seq"] == model["end_seq"]
    missing = await sync_to_async(client_for(bob).get)(f"/api/runs/{run.pk}/spans/")
    assert missing.status_code == 404


async def test_a_session_s_spans_are_its_runs_in_turn(ada: User, bob: User) -> None:
    session = await careful_session(ada)
    await Session.objects.filter(pk=session.pk).aupdate(agent_version=None)
    await sync_to_async(two_plain_runs)(ada, session)

    body = await sync_to_async(get)(ada, f"/api/sessions/{session.pk}/spans/")
    invocations = [run["invocation_id"] for run in body["runs"]]
    assert len(invocations) == 2
    assert [s["invocation_id"] for s in body["spans"]] == [invocations[0]] * 2 + [
        invocations[1]
    ] * 2
    missing = await sync_to_async(client_for(bob).get)(f"/api/sessions/{session.pk}/spans/")
    assert missing.status_code == 404


def two_plain_runs(owner: User, session: Session) -> None:
    """Two stored turns of an agent that only answers (agent and model spans each)."""
    from studio.session_service import append_event_sync

    for text in ("one", "two"):
        said = append_event_sync(session.key, core_events.user_message(session.key, text))
        start = session.last_seq
        run = Run.objects.create(
            session=session, message=text, invocation_id=said.invocation_id, start_seq=start
        )
        for event in answer(session, said.invocation_id):
            append_event_sync(session.key, event)
        session.refresh_from_db()
        run.status, run.ended_at = "succeeded", said.created_at
        run.save()


def answer(session: Session, invocation_id: str) -> list[core_events.Event]:
    agent = core_events.new_id()
    fields = {"invocation_id": invocation_id, "session_id": session.key, "author": "a"}
    return [
        core_events.Event(type="agent_start", span_id=agent, **fields),
        core_events.Event(
            type="agent_message",
            span_id=core_events.new_id(),
            parent_span_id=agent,
            parts=[core_events.TextPart(text="hi")],
            **fields,
        ),
        core_events.Event(type="agent_end", span_id=agent, **fields),
    ]


def downgrade_to_version_1(session: Session) -> None:
    for row in Event.objects.filter(session=session):
        payload = {
            k: v
            for k, v in row.payload.items()
            if k not in {"span_id", "parent_span_id", "started_at"}
        }
        payload["parts"] = [
            {k: v for k, v in p.items() if k != "span_id"} for p in payload["parts"]
        ]
        row.payload, row.schema_version = {**payload, "schema_version": 1}, 1
        row.save()


async def test_sessions_stored_before_spans_draw_once_migrated(ada: User) -> None:
    session = await careful_session(ada)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 2 + 3?"})
    await viewer.until(lambda v: bool(v.events_of_type("approval_request")))
    approval = viewer.events_of_type("approval_request")[0]["approval"]
    decision = {k: approval[k] for k in ("call_id", "args_hash")}
    await viewer.send({"type": "approval", "decision": "deny", **decision})
    await viewer.until_ended()
    run = await Run.objects.aget(session=session)
    before = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    await sync_to_async(downgrade_to_version_1)(session)
    # A session stored before spans has no final spans stored either.
    await RunSpans.objects.filter(run=run).adelete()
    assert (await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/"))["spans"] == []

    migration = __import__("studio.migrations.0006_event_spans", fromlist=["upgrade_events"])
    await sync_to_async(migration.upgrade_events)(apps, None)
    # Stored spans came later (0008): none were kept of a session before its upgrade.
    await RunSpans.objects.filter(run=run).adelete()

    after = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    assert kinds(after["spans"]) == kinds(before["spans"])
    assert await Event.objects.filter(session=session, schema_version=1).acount() == 0


def test_an_ended_runs_spans_are_read_from_its_events_once(ada: User) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    session = make_session(ada, make_agent(ada, "plain"))
    two_plain_runs(ada, session)
    run = Run.objects.filter(session=session).order_by("created_at").first()
    assert run is not None
    RunSpans.objects.filter(run=run).delete()  # as for a run that ended before they were kept
    first = get(ada, f"/api/runs/{run.pk}/spans/")
    assert RunSpans.objects.filter(run=run).exists()  # read once, then kept
    with CaptureQueriesContext(connection) as queries:
        again = get(ada, f"/api/runs/{run.pk}/spans/")
    assert again == first
    assert [s["kind"] for s in again["spans"]] == ["agent", "model"]
    assert not any("studio_event" in q["sql"] for q in queries.captured_queries)

    Run.objects.filter(pk=run.pk).update(status="running", ended_at=None)  # live again
    with CaptureQueriesContext(connection) as queries:
        live = get(ada, f"/api/runs/{run.pk}/spans/")
    assert any("studio_event" in q["sql"] for q in queries.captured_queries)
    assert {s["status"] for s in live["spans"]} == {"ok"}


def test_keeping_a_runs_final_spans_again_replaces_them_in_one_statement(ada: User) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studio.traces.reads import keep_final_spans, run_spans

    session = make_session(ada, make_agent(ada, "plain"))
    two_plain_runs(ada, session)
    run = Run.objects.filter(session=session).order_by("created_at").first()
    assert run is not None
    keep_final_spans(run, run_spans(run))
    with CaptureQueriesContext(connection) as queries:
        kept = keep_final_spans(run, [])  # a row is there: it is replaced, not added
    assert kept == b"[]"
    assert [row.spans for row in RunSpans.objects.filter(run=run)] == ["[]"]
    assert len(queries.captured_queries) == 1
