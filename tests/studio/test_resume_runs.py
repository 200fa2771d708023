"""Resuming an interrupted run from its last step: through the API (owner-scoped, 409s
that say why) and the admin. The resumed run is a new run with no user message of its
own; its agent reads the record its predecessor left, recorded tool results included."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from agents_core import events as core_events
from studio import runs, services
from studio.asgi import application
from studio.models import Run, RunStatus, Session
from studio.runs import records, recovery
from studio.runs.records import Ending
from studio.session_service import append_event_sync
from tests.studio.conftest import client_for, make_agent, make_session, remote_model
from tests.support.live import (
    run_manager,  # noqa: F401  (an autouse fixture)
    stored,
    watch,
)
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "what are 1 + 1 and 2 + 2?"
ANSWER = "1 + 1 is 2; I cannot tell whether 2 + 2 was worked out."


def _call(call_id: str, expression: str) -> core_events.ToolCallPart:
    return core_events.ToolCallPart(
        call_id=call_id, name="calculator", args={"expression": expression}
    )


def interrupted_run(session: Session, text: str = QUESTION) -> Run:
    """A run of ``session`` whose server died while its second calculator call ran
    (journalled as started), after the first one answered; swept by recovery."""
    run = services.start_run(session, text)
    assert records.claim_run(run, owner="dead-host:1:abc", lease_s=30)
    run.refresh_from_db()
    E = core_events.EventType

    def event(kind: core_events.EventType, **fields: Any) -> core_events.Event:
        return core_events.Event(
            type=kind,
            invocation_id=run.invocation_id,
            session_id=session.key,
            author="calc",
            branch="calc",
            **fields,
        )

    answered = core_events.ToolResponsePart(call_id="c1", name="calculator", result="2")
    for stored_event in [
        event(E.AGENT_START),
        event(E.AGENT_MESSAGE, parts=[_call("c1", "1 + 1"), _call("c2", "2 + 2")]),
        event(E.TOOL_RESPONSE, parts=[answered]),
        event(E.TOOL_STARTED, parts=[_call("c2", "2 + 2")]),
    ]:
        append_event_sync(session.key, stored_event)
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    assert recovery.interrupt(run.pk, runs.executor()) is not None
    return Run.objects.get(pk=run.pk)


def remote_session(owner: User, server: OpenAIServer) -> Session:
    remote_model(owner, server.base_url)
    agent = make_agent(owner, "calc", model="remote", tools=[{"name": "calculator"}])
    return make_session(owner, agent)


def resume(user: User, run: Run) -> Any:
    return client_for(user).post(f"/api/runs/{run.pk}/resume-from-last-step/")


async def test_an_interrupted_run_resumes_from_its_record_without_a_new_user_message(
    ada: User,
) -> None:
    with OpenAIServer(models=["fake-model"]) as server:
        server.reply(ANSWER)
        session = await sync_to_async(remote_session)(ada, server)
        interrupted = await sync_to_async(interrupted_run)(session)
        before = await stored(session)
        viewer = await watch(application, session, ada)

        response = await sync_to_async(resume)(ada, interrupted)
        assert response.status_code == 202, response.content
        body = response.json()
        assert (body["resumed_from"], body["message"], body["status"]) == (
            str(interrupted.pk),
            "",
            "queued",
        )
        await viewer.until(
            lambda v: v.run_status == "succeeded" and v.status["run"]["id"] == body["id"]
        )
        await viewer.close()
        [request] = server.requests

    resumed = await Run.objects.aget(pk=body["id"])
    assert resumed.status == RunStatus.SUCCEEDED, resumed.error_message
    assert resumed.invocation_id == body["invocation_id"] != interrupted.invocation_id
    assert resumed.start_seq == before[-1]["seq"]
    events = await stored(session)
    assert events[: len(before)] == before  # the record is kept as it was
    added = events[len(before) :]
    assert [e["type"] for e in added] == ["agent_start", "agent_message", "agent_end"]
    assert {e["invocation_id"] for e in added} == {resumed.invocation_id}
    assert added[1]["parts"][0]["text"] == ANSWER
    # The model read the record: the user's one question, the answered call's result and
    # the call left in doubt; nothing was asked again.
    said = [m for m in request.messages if m["role"] == "user"]
    assert [m["content"] for m in said] == [QUESTION]
    results = {m["tool_call_id"]: m["content"] for m in request.messages if m["role"] == "tool"}
    assert results["c1"] == "2"
    assert "in_doubt" in results["c2"]
    assert resumed.timing is not None
    api_run = (await sync_to_async(client_for(ada).get)(f"/api/runs/{resumed.pk}/")).json()
    assert api_run["resumed_from"] == str(interrupted.pk)
    spans = await sync_to_async(client_for(ada).get)(f"/api/runs/{resumed.pk}/spans/")
    assert {span["kind"] for span in json.loads(spans.content)["spans"]} >= {"agent", "model"}
    assert (await Session.objects.aget(pk=session.pk)).status == "succeeded"


def test_only_the_latest_interrupted_run_of_a_session_resumes_and_only_once(
    ada: User, bob: User, recording_executor: Any
) -> None:
    session = make_session(ada)
    first = interrupted_run(session)
    refused = resume(bob, first)
    assert refused.status_code == 404

    later = services.start_run(session, "and 3 + 3?")  # queued: a run is in progress
    busy = resume(ada, first)
    assert (busy.status_code, busy.json()["code"]) == (409, "run_in_progress")
    # Queued and never claimed within a lease: recovery interrupts it too.
    Run.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(hours=2))
    Run.objects.filter(pk=later.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert recovery.interrupt(later.pk, runs.executor()) is not None
    superseded = resume(ada, first)
    assert (superseded.status_code, superseded.json()["code"]) == (409, "run_superseded")
    assert "latest" in superseded.json()["detail"]

    accepted = resume(ada, later)
    assert accepted.status_code == 202, accepted.content
    resumed = Run.objects.get(pk=accepted.json()["id"])
    assert (resumed.resumed_from_id, resumed.status) == (later.pk, RunStatus.QUEUED)
    assert recording_executor.submitted == [first.pk, later.pk, resumed.pk]
    assert Session.objects.get(pk=session.pk).status == "queued"
    twice = resume(ada, later)  # a second press while the first resumption is queued
    assert (twice.status_code, twice.json()["code"]) == (409, "run_in_progress")

    records.end_run(resumed.pk, Ending(RunStatus.SUCCEEDED))
    finished = resume(ada, resumed)
    assert (finished.status_code, finished.json()["code"]) == (409, "run_not_interrupted")
    assert "succeeded" in finished.json()["detail"]
    assert list(Run.objects.filter(session=session).values_list("resumed_from", flat=True)) == [
        later.pk,
        None,
        None,
    ]


def test_a_resumed_run_that_is_interrupted_again_can_be_resumed_again(ada: User) -> None:
    session = make_session(ada)
    first = interrupted_run(session)
    second = services.resume_interrupted_run(first)
    assert records.claim_run(second, owner="dead-host:2:def", lease_s=30)
    Run.objects.filter(pk=second.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    ended = recovery.interrupt(second.pk, runs.executor())
    assert ended is not None
    # Its terminal event is its own, though it stored no user message.
    [error] = ended.events
    assert (error.type, error.invocation_id) == ("error", second.invocation_id)
    third = services.resume_interrupted_run(second)
    assert (third.resumed_from_id, third.status) == (second.pk, RunStatus.QUEUED)
    assert (
        not Session.objects.get(pk=session.pk)
        .events.filter(seq__gt=first.start_seq + 1, type="user_message")
        .exists()
    )


def test_the_api_schema_lists_resume_from_last_step(ada: User) -> None:
    paths = client_for(ada).get("/api/schema/", {"format": "json"}).json()["paths"]
    assert "/api/runs/{id}/resume-from-last-step/" in paths


def test_the_admin_resumes_the_interrupted_runs_it_can(staff: User, ada: User) -> None:
    interrupted = interrupted_run(make_session(ada))
    done = services.start_run(make_session(ada), "two")
    records.end_run(done.pk, Ending(RunStatus.SUCCEEDED))
    admin = Client()
    admin.force_login(staff)
    selected = [str(interrupted.pk), str(done.pk)]
    response = admin.post(
        "/admin/studio/run/",
        {"action": "resume_from_last_step", "_selected_action": selected},
        follow=True,
    )
    assert "Resumed 1 interrupted run(s) from their last step; 1 could not be" in (
        response.content.decode()
    )
    [resumed] = interrupted.resumptions.all()
    assert (resumed.status, resumed.message) == (RunStatus.QUEUED, "")
    assert not done.resumptions.exists()
