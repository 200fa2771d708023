"""Pause and resume through Studio: over the websocket and the API (inline execution),
owner-scoped with 409s that say why, and in worker execution, where the worker reads
the pause from the database."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import transaction

from studio import services
from studio.asgi import application
from studio.models import Run, RunStatus, Session, SessionStatus
from studio.runs import records, tasks
from tests.studio.conftest import client_for
from tests.support.live import (
    Viewer,
    eventually,
    latest_run,
    new_session,
    run_manager,  # noqa: F401  (an autouse fixture)
    scripted_agent,
    stored,
    watch,
)

pytestmark = pytest.mark.django_db(transaction=True)

# The first step streams for about two seconds, then calls the calculator: a pause
# asked while it streams holds the run before its second model call.
THINKING = " ".join(f"w{i}" for i in range(100))
SCRIPT = [
    {"text": THINKING, "tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
    {"text": "the answer is 42"},
]


def pausable_agent(owner: User) -> None:
    scripted_agent(owner, "pausable", SCRIPT, token_delay_s=0.02, tools=[{"name": "calculator"}])


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def waiting(viewer: Viewer, status: str, waits_on: str | None) -> bool:
    frame = viewer.status
    return viewer.run_status == status and frame is not None and frame["waiting_for"] == waits_on


async def test_a_run_paused_and_resumed_over_the_socket_holds_between_steps(ada: User) -> None:
    await sync_to_async(pausable_agent)(ada)
    session = await new_session(ada, "pausable")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 6 * 7?"})
    await viewer.until(lambda v: bool(v.partials))
    await viewer.send({"type": "resume"})  # not paused: refused, the socket stays open
    await viewer.until(lambda v: bool(v.errors))
    assert viewer.errors[-1]["code"] == "run_not_paused"

    await viewer.send({"type": "pause"})
    await viewer.until(lambda v: bool(v.events_of_type("run_paused")))
    await viewer.until(lambda v: waiting(v, "paused", "paused"))
    # Held after the first step and its tool call, before the second model call.
    assert types(viewer.events)[-2:] == ["tool_response", "run_paused"]
    assert (await Session.objects.aget(pk=session.pk)).status == SessionStatus.PAUSED

    await viewer.send({"type": "resume"})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    after = types(viewer.events)[types(viewer.events).index("run_paused") :]
    assert after[:3] == ["run_paused", "run_resumed", "agent_message"]
    assert viewer.events[-2]["parts"][0]["text"] == "the answer is 42"
    run = await latest_run(session)
    assert run is not None and run.timing is not None and run.timing["human_ms"] > 0
    await viewer.close()


async def test_the_api_pauses_and_resumes_only_its_owners_running_runs(
    ada: User, bob: User
) -> None:
    await sync_to_async(pausable_agent)(ada)
    session = await new_session(ada, "pausable")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 6 * 7?"})
    await viewer.until(lambda v: bool(v.partials))
    run = await latest_run(session)
    assert run is not None
    ada_api, bob_api = client_for(ada), client_for(bob)
    post = sync_to_async(lambda client, path: client.post(path))

    assert (await post(bob_api, f"/api/runs/{run.pk}/pause/")).status_code == 404
    refused = await post(ada_api, f"/api/runs/{run.pk}/resume/")
    assert refused.status_code == 409
    assert refused.json()["code"] == "run_not_paused" and refused.json()["detail"]

    paused = await post(ada_api, f"/api/runs/{run.pk}/pause/")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    again = await post(ada_api, f"/api/runs/{run.pk}/pause/")
    assert (again.status_code, again.json()["code"]) == (409, "run_not_running")
    await viewer.until(lambda v: bool(v.events_of_type("run_paused")))
    assert (await post(bob_api, f"/api/runs/{run.pk}/resume/")).status_code == 404

    resumed = await post(ada_api, f"/api/runs/{run.pk}/resume/")
    assert resumed.status_code == 200 and resumed.json()["status"] == "running"
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    ended = await post(ada_api, f"/api/runs/{run.pk}/pause/")
    assert (ended.status_code, ended.json()["code"]) == (409, "run_not_running")
    await viewer.close()


async def test_a_paused_run_can_be_cancelled(ada: User) -> None:
    await sync_to_async(pausable_agent)(ada)
    session = await new_session(ada, "pausable")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 6 * 7?"})
    await viewer.until(lambda v: bool(v.partials))
    await viewer.send({"type": "pause"})
    await viewer.until(lambda v: bool(v.events_of_type("run_paused")))
    await viewer.send({"type": "cancel"})
    await viewer.until_ended()
    assert viewer.run_status == "cancelled"
    assert types(viewer.events)[-1] == "error"
    await viewer.close()


def test_the_openapi_schema_lists_pause_and_resume(ada: User) -> None:
    paths = client_for(ada).get("/api/schema/", {"format": "json"}).json()["paths"]
    assert {"/api/runs/{id}/pause/", "/api/runs/{id}/resume/"} <= set(paths)


@pytest.mark.usefixtures("worker_execution")
async def test_a_worker_run_pauses_and_resumes_as_its_record_says(ada: User) -> None:
    await sync_to_async(pausable_agent)(ada)
    session = await new_session(ada, "pausable")
    run = await sync_to_async(services.start_run)(session, "what is 6 * 7?")
    executing = asyncio.create_task(tasks.execute(run.pk))
    await eventually(lambda: Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).aexists())
    await sync_to_async(services.pause_run)(run)

    async def held() -> bool:
        return "run_paused" in types(await stored(session))

    await eventually(held)
    assert not executing.done()
    assert (await Run.objects.aget(pk=run.pk)).status == RunStatus.PAUSED
    await sync_to_async(services.resume_run)(run)
    await asyncio.wait_for(executing, timeout=10)
    events = types(await stored(session))
    assert events.index("run_resumed") == events.index("run_paused") + 1
    assert (await Run.objects.aget(pk=run.pk)).status == RunStatus.SUCCEEDED


async def test_a_pause_recorded_by_another_server_holds_the_run_at_its_lease_renewal(
    ada: User, settings: Any
) -> None:
    """With inline execution on several servers, the one asked to pause may not hold the
    run: the pause is recorded only, and the executing server follows the record when
    it renews the run's lease (as it does for a cancel)."""
    settings.STUDIO_RUN_LEASE_S = 0.6
    await sync_to_async(pausable_agent)(ada)
    session = await new_session(ada, "pausable")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 6 * 7?"})
    await viewer.until(lambda v: bool(v.partials))
    run = await latest_run(session)
    assert run is not None

    def record(paused: bool) -> None:  # what the other server's services do, unheard here
        with transaction.atomic():
            locked = Run.objects.select_for_update().get(pk=run.pk)
            (records.request_pause if paused else records.request_resume)(locked)

    await sync_to_async(record)(True)
    await viewer.until(lambda v: bool(v.events_of_type("run_paused")))
    await viewer.until(lambda v: waiting(v, "paused", "paused"))
    await sync_to_async(record)(False)
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    after = types(viewer.events)[types(viewer.events).index("run_paused") :]
    assert after[:2] == ["run_paused", "run_resumed"]
    await viewer.close()
