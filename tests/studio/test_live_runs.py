"""Live runs through the run manager: approvals over the socket and the API, cancel
through the API, the one-run-per-session and per-user limits, what a status says the
run waits for, and viewers that never see a gap or a duplicate whatever the channel
layer does."""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.layers import get_channel_layer
from django.contrib.auth.models import User
from django.test import Client

from agents_core import events as core_events
from studio import layers, live, services
from studio.asgi import application
from studio.consumers.watch import SessionWatch
from studio.models import Run, RunStatus, Session
from studio.runs import execute, records
from studio.runs.records import Ending
from studio.session_service import append_event_sync
from tests.studio.conftest import client_for, make_agent, make_session
from tests.support.live import (
    Viewer,
    eventually,
    latest_run,
    new_session,
    run_manager,  # noqa: F401  (an autouse fixture)
    run_to_end,
    scripted_agent,
    slow_agent,
    stored,
    watch,
)

pytestmark = pytest.mark.django_db(transaction=True)

CALCULATOR = (
    "Work out arithmetic with the calculator tool.\nResult: The answer is {last_tool_result}."
)


@sync_to_async
def approval_session(owner: User) -> Session:
    tools = [{"name": "calculator", "requires_approval": True}]
    return make_session(owner, make_agent(owner, "careful", instruction=CALCULATOR, tools=tools))


async def start_and_await_approval(viewer: Viewer) -> dict[str, Any]:
    await viewer.send({"type": "user_message", "text": "what is 2 + 3?"})
    await viewer.until(lambda v: bool(v.events_of_type("approval_request")))
    await viewer.until(lambda v: v.status is not None and v.status["waiting_for"] == "approval")
    approval: dict[str, Any] = viewer.events_of_type("approval_request")[0]["approval"]
    return approval


def decision(approval: dict[str, Any], verdict: str, **extra: Any) -> dict[str, Any]:
    return {
        "call_id": approval["call_id"],
        "args_hash": approval["args_hash"],
        "decision": verdict,
        **extra,
    }


async def test_two_users_runs_waiting_on_the_same_call_id_are_decided_apart(
    ada: User, bob: User
) -> None:
    """Call ids come from the model: the scripted one says the same id in every run."""
    viewers = []
    for owner in (ada, bob):
        viewers.append(await watch(application, await approval_session(owner), owner))
    ada_approval, bob_approval = [await start_and_await_approval(v) for v in viewers]
    assert ada_approval["call_id"] == bob_approval["call_id"]
    await viewers[1].send({"type": "approval", **decision(bob_approval, "deny", reason="no")})
    await viewers[1].until_ended()
    assert viewers[0].status is not None and viewers[0].status["waiting_for"] == "approval"
    await viewers[0].send({"type": "approval", **decision(ada_approval, "approve")})
    await viewers[0].until_ended()
    assert [v.run_status for v in viewers] == ["succeeded", "succeeded"]
    verdicts = [v.events_of_type("approval_decision")[0]["approval"] for v in viewers]
    assert [(a["decision"], a["decided_by"]) for a in verdicts] == [
        ("approve", "ada"),
        ("deny", "bob"),
    ]


async def test_an_approval_decided_over_the_socket_resumes_the_run(ada: User) -> None:
    session = await approval_session(ada)
    viewer = await watch(application, session, ada)
    approval = await start_and_await_approval(viewer)
    assert approval["tool"] == "calculator"
    await viewer.send({"type": "approval", **decision(approval, "approve")})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    [decided] = viewer.events_of_type("approval_decision")
    assert (decided["approval"]["decision"], decided["approval"]["decided_by"]) == (
        "approve",
        "ada",
    )
    [response] = viewer.events_of_type("tool_response")
    assert response["parts"][0]["result"] == "5"
    assert viewer.events[-2]["parts"][0]["text"] == "The answer is 5."
    waits = [s["waiting_for"] for s in viewer.statuses]
    assert "approval" in waits
    assert waits[-1] is None
    assert viewer.events == await stored(session)


async def test_the_status_says_the_model_is_answering_while_tokens_stream(ada: User) -> None:
    agent = await sync_to_async(slow_agent)(ada, words=2000)
    viewer = await watch(application, await new_session(ada, agent.name), ada)
    await viewer.send({"type": "user_message", "text": "talk"})
    await viewer.until(lambda v: len(v.partials) > 3)
    assert viewer.status is not None
    assert (viewer.run_status, viewer.status["waiting_for"]) == ("running", "model")


async def test_the_status_says_a_tool_is_running_while_it_runs(ada: User, settings: Any) -> None:
    settings.STUDIO_SHELL_ALLOWLIST = ["sleep"]
    script = [{"tool_calls": [{"name": "shell", "args": {"command": "sleep 0.5"}}]}, {"text": "ok"}]
    agent = await sync_to_async(scripted_agent)(ada, "sleeper", script, tools=[{"name": "shell"}])
    viewer = await watch(application, await new_session(ada, agent.name), ada)
    await viewer.send({"type": "user_message", "text": "nap"})
    await viewer.until(lambda v: v.status is not None and v.status["waiting_for"] == "tool")
    assert not viewer.events_of_type("tool_response")
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"


async def test_an_approval_decided_over_the_api_resumes_the_run(ada: User, bob: User) -> None:
    session = await approval_session(ada)
    viewer = await watch(application, session, ada)
    approval = await start_and_await_approval(viewer)
    url = f"/api/sessions/{session.pk}/approvals/"
    foreign = await sync_to_async(client_for(bob).post)(url, decision(approval, "approve"))
    assert foreign.status_code == 404
    wrong = dict(decision(approval, "approve"), args_hash="0" * 64)
    conflict = await sync_to_async(client_for(ada).post)(url, wrong, format="json")
    assert (conflict.status_code, conflict.json()["code"]) == (409, "approval_stale")
    edited = decision(approval, "approve", edited_args={"expression": "20 + 22"})
    response = await sync_to_async(client_for(ada).post)(url, edited, format="json")
    assert response.status_code == 204, response.content
    await viewer.until_ended()
    assert viewer.events_of_type("tool_response")[0]["parts"][0]["result"] == "42"
    again = await sync_to_async(client_for(ada).post)(url, edited, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "approval_decided")


def session_list(user: User, query: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/sessions/?{query}").content.decode()


async def test_a_session_waiting_on_a_person_is_listed_as_waiting_for_one(
    ada: User,
) -> None:
    session = await approval_session(ada)
    viewer = await watch(application, session, ada)
    approval = await start_and_await_approval(viewer)

    assert (await Session.objects.aget(pk=session.pk)).status == "waiting"
    listed = await sync_to_async(session_list)(ada, "status=waiting")
    assert f'data-session="{session.pk}"' in listed
    assert "waiting for a person</span>" in listed
    running = await sync_to_async(session_list)(ada, "status=running")
    assert f'data-session="{session.pk}"' not in running

    await viewer.send({"type": "approval", **decision(approval, "approve")})
    await viewer.until_ended()
    assert (await Session.objects.aget(pk=session.pk)).status == "succeeded"
    listed = await sync_to_async(session_list)(ada, "status=succeeded")
    row = listed[listed.index(f'data-session="{session.pk}"') :]
    run = await Run.objects.aget(session=session)
    figures = f"{run.input_tokens:,} in · {run.output_tokens:,} out"
    assert figures in row[: row.index("</tr>")]
    assert re.search(r'data-testid="duration">\d[^<]* (ms|s)<', row)


async def test_a_denied_call_does_not_run_and_the_model_reads_the_refusal(ada: User) -> None:
    session = await approval_session(ada)
    viewer = await watch(application, session, ada)
    approval = await start_and_await_approval(viewer)
    await viewer.send({"type": "approval", **decision(approval, "deny", reason="no maths")})
    await viewer.until_ended()
    [response] = viewer.events_of_type("tool_response")
    assert response["parts"][0]["is_error"]
    assert "no maths" in response["parts"][0]["result"]


async def test_a_decision_for_no_pending_call_is_an_error_frame(ada: User) -> None:
    viewer = await watch(application, await new_session(ada), ada)
    frame = {"type": "approval", "call_id": "nope", "args_hash": "a" * 64, "decision": "deny"}
    await viewer.send(frame)
    await viewer.until(lambda v: bool(v.errors))
    assert viewer.errors[0]["code"] == "approval_not_pending"


async def test_an_approval_body_is_validated_by_the_api(ada: User) -> None:
    session = await new_session(ada)
    url = f"/api/sessions/{session.pk}/approvals/"
    response = await sync_to_async(client_for(ada).post)(
        url, {"call_id": "c", "args_hash": "short", "decision": "maybe", "extra": 1}, format="json"
    )
    assert response.status_code == 400
    assert {e["path"] for e in response.json()["errors"]} == {"args_hash", "decision", "extra"}


async def test_cancel_through_the_api_stops_the_run_its_viewers_watch(ada: User) -> None:
    agent = await sync_to_async(slow_agent)(ada, words=2000)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until(lambda v: bool(v.partials))
    run = await latest_run(session)
    assert run is not None
    response = await sync_to_async(client_for(ada).post)(f"/api/runs/{run.pk}/cancel/")
    assert (response.status_code, response.json()["status"]) == (200, "cancelled")
    await viewer.until(lambda v: bool(v.events_of_type("error")), within=5)
    await viewer.until_ended()
    errors = [event["error"]["code"] for event in viewer.events_of_type("error")]
    assert errors == ["model_call_cut_off", "cancelled"]  # the streaming call, then the run
    assert viewer.run_status == "cancelled"


async def test_a_message_to_a_busy_session_is_409_through_the_api(ada: User) -> None:
    agent = await sync_to_async(slow_agent)(ada)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "one"})
    await viewer.until(lambda v: bool(v.partials))
    url = f"/api/sessions/{session.pk}/messages/"
    response = await sync_to_async(client_for(ada).post)(url, {"text": "two"})
    assert (response.status_code, response.json()["code"]) == (409, "run_in_progress")


async def test_the_per_user_cap_on_active_runs_answers_too_many_runs(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_MAX_CONCURRENT_RUNS_PER_USER = 1
    agent = await sync_to_async(slow_agent)(ada)
    busy, other = await new_session(ada, agent.name), await new_session(ada)
    viewer = await watch(application, busy, ada)
    await viewer.send({"type": "user_message", "text": "one"})
    await viewer.until(lambda v: bool(v.partials))
    second = await watch(application, other, ada)
    await second.send({"type": "user_message", "text": "two"})
    await second.until(lambda v: bool(v.errors))
    assert second.errors[0]["code"] == "too_many_runs"
    url = f"/api/sessions/{other.pk}/messages/"
    response = await sync_to_async(client_for(ada).post)(url, {"text": "two"})
    assert (response.status_code, response.json()["code"]) == (429, "too_many_runs")
    await viewer.send({"type": "cancel"})
    await viewer.until_ended()
    await run_to_end(second, "now there is room")
    assert second.run_status == "succeeded"


# What the channel layer may do to a viewer


def event(session: Session, text: str) -> core_events.Event:
    return core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="inv",
        session_id=session.key,
        author="helper",
        parts=[core_events.TextPart(text=text)],
    )


@sync_to_async
def store(session: Session, text: str) -> core_events.Event:
    return append_event_sync(session.key, event(session, text))


async def publish(session: Session, stored_event: core_events.Event, after: int) -> None:
    await live.publish(session.pk, [(stored_event, after)])


async def test_a_dropped_group_message_is_filled_from_the_database(ada: User) -> None:
    session = await new_session(ada)
    viewer = await watch(application, session, ada)
    first, _, third = [await store(session, t) for t in ("one", "two", "three")]
    await publish(session, third, 2)  # one and two were "dropped" by the layer
    await viewer.until(lambda v: len(v.events) == 3)
    assert viewer.seqs == [1, 2, 3]
    await publish(session, first, 0)  # late duplicates are dropped
    await publish(session, third, 2)
    fourth = await store(session, "four")
    await publish(session, fourth, 3)
    await viewer.until(lambda v: len(v.events) >= 4)
    assert viewer.seqs == [1, 2, 3, 4]


async def test_a_partial_is_sent_only_where_it_belongs(ada: User) -> None:
    session = await new_session(ada)
    viewer = await watch(application, session, ada)
    first = await store(session, "one")
    await publish(session, first, 0)
    token = event(session, "tok").model_copy(update={"partial": True})
    await live.publish(session.pk, [(token, 0)])  # stale: before seq 1
    second = await store(session, "two")
    await live.publish(session.pk, [(token, 2)])  # ahead: seq 2 comes first
    await viewer.until(lambda v: bool(v.partials))
    assert viewer.seqs == [1, 2]
    assert [f["after_seq"] for f in viewer.partials] == [2]
    assert viewer.frames[-1] == viewer.partials[0]
    await publish(session, second, 1)
    await viewer.send({"type": "cancel"})
    await viewer.until(lambda v: bool(v.errors))
    assert viewer.seqs == [1, 2]


async def test_a_run_goes_on_when_publishing_fails_and_viewers_resync(
    ada: User, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.STUDIO_LIVE_RESYNC_S = 0.05
    session = await new_session(ada)
    viewer = await watch(application, session, ada)
    layer = get_channel_layer(live.LAYER)

    async def broken(group: str, message: dict[str, Any]) -> None:
        raise ConnectionError("the layer is down")

    monkeypatch.setattr(layer, "group_send", broken)
    await viewer.send({"type": "user_message", "text": "hello"})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    assert viewer.events == await stored(session)
    assert viewer.seqs == list(range(1, len(viewer.seqs) + 1))


async def test_a_viewer_whose_socket_dropped_mid_send_is_an_info_line_each_time(
    ada: User, settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On Daphne, a send to a websocket that closed while the server still had data
    for it raises autobahn's ``Disconnected`` (tests/e2e drops real sockets so); here
    only that send is faked, and both the live deliveries and the resyncs meet it."""
    settings.STUDIO_LIVE_RESYNC_S = 0.05
    caplog.set_level(logging.INFO, logger="studio.consumers")
    agent = await sync_to_async(slow_agent)(ada, words=40)
    session = await new_session(ada, agent.name)
    dropped = await watch(application, session, ada)
    [gone] = SessionWatch._watches[session.pk].viewers
    attempts = 0

    async def closed(*args: Any, **kwargs: Any) -> None:
        nonlocal attempts
        attempts += 1
        raise Disconnected("Attempt to send on a closed protocol")

    monkeypatch.setattr(gone, "send", closed)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until_ended()
    delivered = attempts

    async def resynced() -> bool:  # only the resyncs still try, the run having ended
        return attempts > delivered

    await eventually(resynced)
    assert viewer.events == await stored(session)
    assert viewer.seqs == list(range(1, len(viewer.seqs) + 1))
    told = [r for r in caplog.records if r.name == "studio.consumers"]
    assert len(told) >= 2
    assert {(r.levelno, r.exc_info) for r in told} == {(logging.INFO, None)}
    assert all("did not reach a viewer (Disconnected: " in r.getMessage() for r in told)
    await dropped.close()


# A run that ends elsewhere


@sync_to_async
def claimed_elsewhere(session: Session) -> Run:
    """A running run of ``session`` that another process executes."""
    run = Run.objects.create(session=session, message="elsewhere", start_seq=0)
    assert records.claim_run(run, owner="other-host:1:0000", lease_s=60)
    return run


@sync_to_async
def executor_ends(session: Session, run: Run) -> core_events.Event:
    """What that process does once it hears of the cancel: store the run's last event,
    then let go of the run."""
    ended = records.end_run(run.pk, Ending(RunStatus.CANCELLED, "cancelled", "bye"))
    assert ended is not None
    return ended.events[-1]


async def test_a_run_cancelled_elsewhere_ends_for_viewers_only_after_its_last_event(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_LIVE_RESYNC_S = 0.05
    session = await new_session(ada)
    run = await claimed_elsewhere(session)
    viewer = await watch(application, session, ada)
    assert viewer.run_status == "running"

    await sync_to_async(services.cancel_run)(run)  # recorded, but its executor goes on
    status = await sync_to_async(live.snapshot)(session.pk)
    assert (status.run or {})["status"] == "running"
    assert status.waiting_for == "model"

    last = await executor_ends(session, run)
    await viewer.until(lambda v: v.run_status == "cancelled")
    ended_at = next(
        i
        for i, frame in enumerate(viewer.frames)
        if frame["type"] == "status" and frame["run"]["status"] == "cancelled"
    )
    seqs_before_end = [f["event"]["seq"] for f in viewer.frames[:ended_at] if f["type"] == "event"]
    assert seqs_before_end[-1] == last.seq
    assert viewer.events == await stored(session)


async def test_the_embedded_layer_gives_every_member_the_message_as_sent() -> None:
    layer = get_channel_layer()
    if not isinstance(layer, layers.InMemoryChannelLayer):
        pytest.skip("REDIS_URL is set: the embedded layer is not in use")
    full, ok = await layer.new_channel(), await layer.new_channel()
    for channel in (full, ok):
        await layer.group_add("fanout", channel)
    for n in range(layer.capacity):
        await layer.send(full, {"type": "filler", "n": n})
    message = {"type": "live.batch", "events": [[1, 0, "{}"]], "status": None}
    await layer.group_send("fanout", message)  # a full member is skipped, not waited for
    message["events"].append([2, 1, "{}"])  # the sender's later changes are not seen
    assert await layer.receive(ok) == {
        "type": "live.batch",
        "events": [[1, 0, "{}"]],
        "status": None,
    }
    assert (await layer.receive(full))["type"] == "filler"


async def test_the_user_message_reaches_viewers_before_the_agent_is_built(
    ada: User, monkeypatch: Any
) -> None:
    """What the user said shows at once: it is stored with the queued run, and its
    viewers need not wait for the run's agent to be built (MCP servers, a big spec)."""
    building = threading.Event()
    built = execute._prepare

    def held_prepare(*args: Any) -> Any:
        building.wait(10)
        return built(*args)

    monkeypatch.setattr(execute, "_prepare", held_prepare)
    session = await new_session(ada)
    viewer = await watch(application, session, ada, batch=True)
    await viewer.send({"type": "user_message", "text": "hello"})

    await viewer.until(lambda v: bool(v.events_of_type("user_message")))
    assert [e["type"] for e in viewer.events] == ["user_message"]  # nothing else yet
    building.set()
    await viewer.until_ended()

    assert viewer.events == await stored(session)  # once each, in order
    assert viewer.seqs == list(range(1, len(viewer.seqs) + 1))
