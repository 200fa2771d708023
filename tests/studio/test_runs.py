"""Executing a queued run through Runner and DjangoSessionService."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core import events as core_events
from agents_core.context import CancellationToken
from studio import services, wire
from studio.errors import ConflictError
from studio.ledger import ledger_of
from studio.models import Event, ModelConfig, Run, RunStatus, Session
from studio.runs import records
from studio.runs.execute import execute_run
from tests.studio.conftest import make_agent, make_session, remote_model
from tests.support.openai_server import OpenAIServer, TokenUsage

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-run-SECRET-abcdefghijklmnop"


@sync_to_async
def queued_run(owner: User, text: str = "hello", **spec: object) -> Run:
    return services.start_run(make_session(owner, make_agent(owner, **spec)), text)


async def test_a_run_stores_its_events_and_records_success_and_usage(ada: User) -> None:
    run = await queued_run(ada)
    seen: list[core_events.Event] = []

    async def collect(event: core_events.Event) -> None:
        seen.append(event)

    finished = await execute_run(run, on_event=collect)
    stored = [e async for e in Event.objects.filter(session_id=run.session_id).order_by("seq")]
    assert [e.payload for e in stored] == [e.to_wire() for e in seen if not e.partial]
    assert any(e.partial for e in seen)
    assert finished.status == RunStatus.SUCCEEDED
    usage = [e.usage for e in seen if e.usage is not None and not e.partial]
    assert finished.input_tokens == sum(u.input_tokens for u in usage) > 0
    assert finished.output_tokens == sum(u.output_tokens for u in usage) > 0
    assert finished.invocation_id == seen[0].invocation_id
    session = await Session.objects.aget(pk=run.session_id)
    assert (session.status, session.last_seq) == ("succeeded", len(stored))


async def test_a_run_that_is_not_queued_is_not_executed(ada: User) -> None:
    run = await queued_run(ada)
    await sync_to_async(services.cancel_run)(run)
    with pytest.raises(ConflictError):
        await execute_run(run)


async def test_cancelling_through_the_token_ends_the_run_as_cancelled(ada: User) -> None:
    run = await queued_run(ada)
    await ModelConfig.objects.filter(owner=ada).aupdate(options={"token_delay_s": 0.05})
    token = CancellationToken()

    async def cancel_on_first_token(event: core_events.Event) -> None:
        if event.partial:
            token.cancel("stop please")

    finished = await execute_run(run, on_event=cancel_on_first_token, cancel_token=token)
    assert (finished.status, finished.error_code) == (RunStatus.CANCELLED, "cancelled")
    last = await Event.objects.filter(session_id=run.session_id).order_by("-seq").afirst()
    assert last is not None and last.type == "error"


async def test_a_run_cancelled_in_the_database_meanwhile_stays_cancelled(ada: User) -> None:
    run = await queued_run(ada)

    async def cancel_via_api(event: core_events.Event) -> None:
        if event.type is core_events.EventType.USER_MESSAGE:
            await sync_to_async(services.cancel_run)(run)

    finished = await execute_run(run, on_event=cancel_via_api)
    assert finished.status == RunStatus.CANCELLED
    assert finished.input_tokens > 0


async def test_stopping_the_task_marks_the_run_interrupted(ada: User) -> None:
    run = await queued_run(ada)
    await ModelConfig.objects.filter(owner=ada).aupdate(options={"token_delay_s": 0.2})
    started = asyncio.Event()

    async def note_start(event: core_events.Event) -> None:
        started.set()

    task = asyncio.create_task(execute_run(run, on_event=note_start))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await Run.objects.aget(pk=run.pk)).status == RunStatus.INTERRUPTED


async def test_a_run_on_an_openai_compatible_model_never_stores_the_key(ada: User) -> None:
    with OpenAIServer(models=["fake-model"]) as server:
        server.reply("ok", usage=TokenUsage(prompt_tokens=3, completion_tokens=1))

        @sync_to_async
        def setup() -> Run:
            remote_model(ada, server.base_url, api_key=KEY)
            agent = make_agent(ada, "remote_agent", model="remote")
            return services.start_run(make_session(ada, agent), "hi")

        run = await setup()
        finished = await execute_run(run)
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    assert server.authorizations == [f"Bearer {KEY}"]
    payloads = [e.payload async for e in Event.objects.filter(session_id=run.session_id)]
    assert any(
        e.get("usage")
        == {
            "input_tokens": 3,
            "output_tokens": 1,
            "cached_input_tokens": 0,
            "reasoning_tokens": 0,
        }
        for e in payloads
    )
    assert KEY not in repr(payloads)
    export = await sync_to_async(services.export_session)(
        await Session.objects.select_related("agent_version__agent").aget(pk=run.session_id)
    )
    assert KEY not in repr(export)


async def test_a_run_holds_a_lease_of_this_process_while_it_executes_and_then_releases_it(
    ada: User,
) -> None:
    run = await queued_run(ada)
    held: list[tuple[str, bool, int | None]] = []

    async def note_lease(event: core_events.Event) -> None:
        if event.type is core_events.EventType.USER_MESSAGE:
            row = await Run.objects.aget(pk=run.pk)
            held.append((row.owner_process, row.lease_expires_at is not None, row.start_seq))

    finished = await execute_run(run, on_event=note_lease)
    assert held == [(records.PROCESS_ID, True, 0)]
    assert (finished.owner_process, finished.lease_expires_at) == ("", None)


async def test_a_run_that_stops_on_an_unexpected_error_ends_with_a_stored_error_event(
    ada: User,
) -> None:
    run = await queued_run(ada)
    seen: list[core_events.Event] = []

    async def failing_once(event: core_events.Event) -> None:
        seen.append(event)
        if len(seen) == 2:
            raise RuntimeError("the viewers' channel broke")

    with pytest.raises(RuntimeError):
        await execute_run(run, on_event=failing_once)
    failed = await Run.objects.aget(pk=run.pk)
    assert (failed.status, failed.error_code) == (RunStatus.FAILED, "internal_error")
    assert (failed.owner_process, failed.lease_expires_at) == ("", None)
    stored = [e async for e in Event.objects.filter(session_id=run.session_id).order_by("seq")]
    last = stored[-1].payload
    assert (last["type"], last["error"]["code"]) == ("error", "internal_error")
    assert "RuntimeError" in last["error"]["message"]
    assert seen[-1].to_wire() == last  # the viewers were told
    assert last["invocation_id"] == failed.invocation_id == seen[0].invocation_id
    # The session runs again.
    again = await queued_run_on(run.session_id)
    assert (await execute_run(again)).status == RunStatus.SUCCEEDED


@sync_to_async
def queued_run_on(session_pk: object) -> Run:
    return services.start_run(Session.objects.get(pk=session_pk), "again")


async def test_a_run_cancelled_while_a_call_waits_for_approval_answers_it_as_not_run(
    ada: User,
) -> None:
    run = await queued_run(
        ada,
        "what is 2 + 2",
        instruction="Use the calculator.",
        tools=[{"name": "calculator", "requires_approval": True}],
    )
    token = CancellationToken()

    async def cancel_on_request(event: core_events.Event) -> None:
        if event.type is core_events.EventType.APPROVAL_REQUEST:
            token.cancel("stopped from the page")

    finished = await execute_run(run, on_event=cancel_on_request, cancel_token=token)
    assert finished.status == RunStatus.CANCELLED
    stored = [e.to_core() async for e in Event.objects.filter(session_id=run.session_id)]
    stored.sort(key=lambda e: e.seq or 0)
    assert [e.type for e in stored[-2:]] == ["tool_response", "error"]
    (result,) = stored[-2].tool_results
    assert result.output.startswith("not_run: the run was cancelled (stopped from the page)")
    assert not (await sync_to_async(ledger_of)(finished)).open_calls


async def test_a_run_failing_before_its_tool_call_started_answers_it_not_run(ada: User) -> None:
    run = await queued_run(
        ada, "what is 2 + 2", instruction="Use the calculator.", tools=[{"name": "calculator"}]
    )

    async def fail_on_the_call(event: core_events.Event) -> None:
        if not event.partial and event.tool_calls:
            raise RuntimeError("the viewers' channel broke")

    with pytest.raises(RuntimeError):
        await execute_run(run, on_event=fail_on_the_call)
    stored = [e.to_core() async for e in Event.objects.filter(session_id=run.session_id)]
    stored.sort(key=lambda e: e.seq or 0)
    assert [e.type for e in stored[-2:]] == ["tool_response", "error"]
    (result,) = stored[-2].tool_results
    # The effect journal holds no tool_started for the call: it certainly had no effect.
    assert result.output.startswith("not_run: the run failed (internal_error) before this call")


async def test_an_ended_run_records_where_its_wall_time_went(ada: User) -> None:
    run = await queued_run(
        ada, "what is 2 + 2", instruction="Use the calculator.", tools=[{"name": "calculator"}]
    )
    finished = await execute_run(run)
    timing = finished.timing
    assert timing is not None and finished.ended_at is not None
    assert timing["total_ms"] == pytest.approx(
        (finished.ended_at - finished.created_at).total_seconds() * 1000, abs=0.01
    )
    parts = ("queued_ms", "model_ms", "tools_ms", "human_ms", "overhead_ms")
    assert sum(timing[p] for p in parts) == pytest.approx(timing["total_ms"], abs=0.01)
    assert timing["model_ms"] > 0 and timing["tools_ms"] > 0 and timing["human_ms"] == 0
    api_run = await sync_to_async(lambda: wire.run_payload(finished))()
    assert api_run["timing"] == timing
