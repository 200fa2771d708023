"""Crash recovery: leases, abandoned runs marked interrupted, tool calls in doubt."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone

from agents_core import events as core_events
from agents_core.approvals import args_hash
from studio import runs, services
from studio.asgi import application
from studio.models import ApprovalDecision, Event, McpServer, Run, RunStatus, Session
from studio.runs import records, recovery
from studio.session_service import append_event_sync
from tests.studio.conftest import make_session
from tests.support.live import (
    eventually,
    latest_run,
    new_session,
    run_manager,  # noqa: F401  (an autouse fixture)
    scripted_agent,
    slow_agent,
    watch,
)
from tests.support.mcp_server import serve_silence

pytestmark = pytest.mark.django_db(transaction=True)


def _event(session: Session, kind: core_events.EventType, **fields: Any) -> core_events.Event:
    fields = {"author": "helper", **fields}
    return core_events.Event(type=kind, invocation_id="inv-1", session_id=session.key, **fields)


def _call(call_id: str, expression: str = "1 + 1") -> core_events.ToolCallPart:
    return core_events.ToolCallPart(
        call_id=call_id, name="calculator", args={"expression": expression}
    )


def claimed_by_a_dead_server(owner: User) -> tuple[Session, Run]:
    """A new session's run, claimed by a server that is gone."""
    session = make_session(owner)
    run = services.start_run(session, "what is 1 + 1?")
    assert records.claim_run(run, owner="dead-host:1:abc", lease_s=30)
    return session, run


def asked(call_id: str, **fields: Any) -> core_events.ApprovalInfo:
    """The approval asked for calculator call ``call_id`` (1 + 1)."""
    args = {"expression": "1 + 1"}
    hashed = args_hash("calculator", args)
    return core_events.ApprovalInfo(
        call_id=call_id, tool="calculator", args=args, args_hash=hashed, **fields
    )


def crashed_run(owner: User, *, expired: bool = True) -> Run:
    """A run whose server stopped after it asked for three tool calls: one answered, one
    running (journalled as started), one waiting for approval."""
    session, run = claimed_by_a_dead_server(owner)
    E = core_events.EventType
    approval = asked("c3")
    for event in [
        _event(session, E.AGENT_START),
        _event(session, E.AGENT_MESSAGE, parts=[_call("c1"), _call("c2"), _call("c3")]),
        _event(
            session,
            E.TOOL_RESPONSE,
            parts=[core_events.ToolResponsePart(call_id="c1", name="calculator", result="2")],
        ),
        _event(session, E.TOOL_STARTED, parts=[_call("c2")]),
        _event(session, E.APPROVAL_REQUEST, approval=approval),
    ]:
        append_event_sync(session.key, event)
    Run.objects.filter(pk=run.pk).update(invocation_id="inv-1")
    if expired:
        Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    return Run.objects.get(pk=run.pk)


def payloads(session_id: object) -> list[dict[str, Any]]:
    rows = Event.objects.filter(session_id=session_id).order_by("seq")
    return list(rows.values_list("payload", flat=True))


def test_an_abandoned_run_is_interrupted_with_its_unanswered_calls_marked(ada: User) -> None:
    run = crashed_run(ada)
    assert recovery.abandoned_runs(runs.executor()) == [run.pk]
    result = recovery.interrupt(run.pk, runs.executor())
    assert result is not None
    run.refresh_from_db()
    assert (run.status, run.error_code, run.owner_process, run.lease_expires_at) == (
        "interrupted",
        "interrupted",
        "",
        None,
    )
    assert run.session.status == "interrupted"
    events = payloads(run.session_id)
    assert [e["seq"] for e in events] == list(range(1, 10))
    c2, c3, error = events[-3:]
    assert (c2["type"], c2["parts"][0]["call_id"], c2["parts"][0]["is_error"]) == (
        "tool_response",
        "c2",
        True,
    )
    assert c2["parts"][0]["result"].startswith("in_doubt:")
    assert (c2["author"], c2["invocation_id"]) == ("helper", "inv-1")
    assert c3["parts"][0]["call_id"] == "c3"
    assert c3["parts"][0]["result"].startswith("not_run:")
    assert error["type"] == "error"
    assert error["error"]["code"] == "interrupted"
    assert error["error"]["failure"] == "terminal"
    assert "calculator (c2)" in error["error"]["message"]
    assert [e.seq for e in result.events] == [7, 8, 9]
    assert recovery.abandoned_runs(runs.executor()) == []
    assert recovery.interrupt(run.pk, runs.executor()) is None


def test_a_run_whose_lease_is_current_is_left_alone(ada: User) -> None:
    run = crashed_run(ada, expired=False)
    assert recovery.abandoned_runs(runs.executor()) == []
    assert recovery.interrupt(run.pk, runs.executor()) is None
    run.refresh_from_db()
    assert run.status == "running"


def test_a_queued_run_nobody_claimed_within_a_lease_is_interrupted(ada: User) -> None:
    stale = services.start_run(make_session(ada), "hi")
    fresh = services.start_run(make_session(ada), "hi")
    Run.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert recovery.abandoned_runs(runs.executor()) == [stale.pk]
    assert recovery.interrupt(stale.pk, runs.executor()) is not None
    user, error = payloads(stale.session_id)
    assert (user["type"], user["parts"][0]["text"]) == ("user_message", "hi")
    assert error["error"]["code"] == "interrupted"
    assert error["invocation_id"] == user["invocation_id"]
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.status, fresh.status) == ("interrupted", "queued")


def test_a_cancelled_run_whose_server_died_gets_its_markers_and_keeps_its_status(
    ada: User,
) -> None:
    run = crashed_run(ada)
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.CANCELLED, error_code="cancelled", error_message="cancelled by request"
    )
    assert recovery.interrupt(run.pk, runs.executor()) is not None
    run.refresh_from_db()
    assert (run.status, run.lease_expires_at) == ("cancelled", None)
    *_, c2, c3, error = payloads(run.session_id)
    assert [c2["type"], c3["type"]] == ["tool_response", "tool_response"]
    assert (error["type"], error["error"]["code"]) == ("error", "cancelled")


def died_as_it_parked(owner: User, *, timeout_s: float = 600) -> Run:
    """A run whose server stopped after it stored ``run_parked`` (a call waits for
    approval) and before it recorded the run waiting: its lease expired running."""
    session, run = claimed_by_a_dead_server(owner)
    E = core_events.EventType
    approval = asked("c1", timeout_s=timeout_s)
    usage = core_events.Usage(input_tokens=12, output_tokens=5)
    for event in [
        _event(session, E.AGENT_START),
        _event(session, E.AGENT_MESSAGE, parts=[_call("c1")], usage=usage),
        _event(session, E.APPROVAL_REQUEST, approval=approval),
        _event(session, E.RUN_PARKED),
    ]:
        append_event_sync(session.key, event)
    expired = timezone.now() - timedelta(seconds=1)
    Run.objects.filter(pk=run.pk).update(invocation_id="inv-1", lease_expires_at=expired)
    return Run.objects.get(pk=run.pk)


def test_a_run_that_died_as_it_parked_waits_for_its_decision(ada: User) -> None:
    run = died_as_it_parked(ada)
    assert recovery.abandoned_runs(runs.executor()) == [run.pk]
    before = payloads(run.session_id)
    result = recovery.interrupt(run.pk, runs.executor())
    assert result is not None and result.events == []
    run.refresh_from_db()
    assert (run.status, run.owner_process, run.lease_expires_at) == ("waiting", "", None)
    assert run.wakes_at is not None and run.wakes_at > timezone.now()
    assert (run.input_tokens, run.output_tokens) == (12, 5)
    assert run.session.status == "waiting"
    assert payloads(run.session_id) == before  # no interrupted ending, no closed calls
    assert recovery.abandoned_runs(runs.executor()) == []


def test_a_run_that_died_as_it_parked_goes_on_when_its_call_timed_out_meanwhile(
    ada: User, recording_executor: Any
) -> None:
    run = died_as_it_parked(ada, timeout_s=0)
    recording_executor.submitted.clear()  # its start
    assert recovery.interrupt(run.pk, recording_executor) is not None
    run.refresh_from_db()
    assert run.status == "queued"
    assert recording_executor.submitted == [run.pk]  # handed on: its execution is gone
    decision = ApprovalDecision.objects.get(run=run)
    assert (decision.call_id, decision.decision, decision.channel) == ("c1", "deny", "timeout")


async def test_the_manager_interrupts_abandoned_runs_at_start_up_and_tells_viewers(
    ada: User,
) -> None:
    run = await sync_to_async(crashed_run)(ada)
    session = await Session.objects.aget(pk=run.session_id)
    viewer = await watch(application, session, ada)
    await viewer.until(lambda v: v.run_status == "interrupted")
    assert viewer.events == await sync_to_async(payloads)(session.pk)
    assert viewer.events[-1]["error"]["code"] == "interrupted"
    assert viewer.status is not None and viewer.status["waiting_for"] is None


async def test_a_run_that_loses_its_lease_stops(ada: User, settings: Any) -> None:
    settings.STUDIO_RUN_LEASE_S = 0.6
    agent = await sync_to_async(slow_agent)(ada, words=2000)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until(lambda v: bool(v.partials))
    run = await latest_run(session)
    assert run is not None
    # Cancelled by another server: no signal reaches this process, the lease tells.
    await Run.objects.filter(pk=run.pk).aupdate(status=RunStatus.CANCELLED)
    await viewer.until(lambda v: len(v.events_of_type("error")) == 2, within=5)
    errors = [event["error"]["code"] for event in viewer.events_of_type("error")]
    assert errors == ["model_call_cut_off", "cancelled"]  # its streaming call, then the run

    async def released() -> bool:
        fresh = await Run.objects.aget(pk=run.pk)
        return fresh.lease_expires_at is None and fresh.status == "cancelled"

    await eventually(released)


async def test_stopping_the_manager_interrupts_the_runs_it_executes(ada: User) -> None:
    agent = await sync_to_async(slow_agent)(ada, words=2000)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until(lambda v: bool(v.partials))
    await runs.executor().aclose()
    run = await latest_run(session)
    assert run is not None
    assert (run.status, run.owner_process) == ("interrupted", "")
    last = await Event.objects.filter(session=session).order_by("-seq").afirst()
    assert last is not None and last.payload["error"]["code"] == "interrupted"


def hung_agent(owner: User, url: str) -> None:
    """An agent whose MCP server (at ``url``) never answers: its runs are claimed, then
    wait for the connection before the runner starts."""
    McpServer.objects.create(owner=owner, name="hung", transport="http", url=url)
    scripted_agent(owner, "hung", [{"text": "never"}], mcp=[{"server": "hung"}])


async def test_a_run_stopped_before_its_runner_started_keeps_the_users_message(
    ada: User,
) -> None:
    with serve_silence() as silence:
        await sync_to_async(hung_agent)(ada, silence.url)
        session = await new_session(ada, "hung")
        viewer = await watch(application, session, ada)
        await viewer.send({"type": "user_message", "text": "are you there?"})

        async def connecting() -> bool:
            return silence.connected.is_set()

        await eventually(connecting)
        run = await latest_run(session)
        assert run is not None and run.status == RunStatus.RUNNING
        await runs.executor().aclose()
    run = await latest_run(session)
    assert run is not None and run.status == RunStatus.INTERRUPTED
    events = await sync_to_async(payloads)(session.pk)
    assert [(e["seq"], e["type"]) for e in events] == [(1, "user_message"), (2, "error")]
    user, error = events
    assert user["parts"][0]["text"] == "are you there?"
    assert error["error"]["code"] == "interrupted"
    assert error["invocation_id"] == user["invocation_id"] == run.invocation_id
