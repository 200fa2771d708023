"""A run waiting on its model's shared rate limit, seen live: an open ``wait`` span and
``rate_limit_waiting`` event while it waits, the status says so, and both close when the
wait ends or the run is cancelled during it. Real runs on the real ASGI application."""

from __future__ import annotations

import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio.asgi import application
from studio.gates import rate_limits
from studio.models import ModelConfig, Run, Session
from tests.studio.conftest import client_for, make_agent, make_session
from tests.support.live import Viewer, run_manager, stored, watch  # noqa: F401  (autouse)

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def limited_session(owner: User, *, windows_taken: int, window_s: float) -> Session:
    """A session of an agent whose model allows one request per window, with the next
    ``windows_taken`` windows already full (other runs took them)."""
    agent = make_agent(owner, "limited")
    config = ModelConfig.objects.get(owner=owner, name="scripted")
    config.requests_per_minute = 1
    config.save()
    limits = rate_limits.Limits(config.pk, requests=1, tokens=None)
    now = time.time()
    for window in range(windows_taken):
        assert rate_limits.take(limits, 1, now + window * window_s, window_s) is None
    return make_session(owner, agent)


def get(user: User, path: str) -> Any:
    response = client_for(user).get(path)
    assert response.status_code == 200, response.content
    return response.json()


def waits(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in spans if s["kind"] == "wait"]


async def start_waiting(owner: User, session: Session) -> tuple[Viewer, Run]:
    viewer = await watch(application, session, owner)
    await viewer.send({"type": "user_message", "text": "hello"})
    await viewer.until(lambda v: v.status is not None and v.status["waiting_for"] == "rate_limit")
    return viewer, await Run.objects.aget(session=session)


async def test_a_wait_for_the_rate_limit_is_an_open_step_until_the_call_is_admitted(
    ada: User, settings: Any
) -> None:
    window = settings.STUDIO_RATE_WINDOW_S = 1.0
    settings.STUDIO_RATE_MAX_WAIT_S = 30.0
    session = await limited_session(ada, windows_taken=2, window_s=window)
    viewer, run = await start_waiting(ada, session)

    [opened] = viewer.events_of_type("rate_limit_waiting")
    assert "rate limit of scripted" in opened["parts"][0]["text"]
    live = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    [wait] = waits(live["spans"])
    assert (wait["name"], wait["status"], wait["end"]) == ("rate_limit", "open", None)
    assert wait["span_id"] == opened["span_id"] and wait["start_seq"] == opened["seq"]
    assert not viewer.events_of_type("rate_limit_wait")

    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    [closed] = viewer.events_of_type("rate_limit_wait")
    assert closed["span_id"] == opened["span_id"] and closed["error"] is None
    assert closed["started_at"] == opened["created_at"]
    done = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    [wait] = waits(done["spans"])
    assert (wait["status"], wait["end_seq"]) == ("ok", closed["seq"])
    types = [e["type"] for e in await stored(session)]
    assert types.index("rate_limit_wait") < types.index("agent_message")


async def test_cancelling_a_run_that_waits_for_the_rate_limit_ends_the_wait_at_once(
    ada: User, settings: Any
) -> None:
    # A window of an hour: only the cancellation can end this wait within the test.
    window = settings.STUDIO_RATE_WINDOW_S = 3600.0
    settings.STUDIO_RATE_MAX_WAIT_S = 7200.0
    session = await limited_session(ada, windows_taken=1, window_s=window)
    viewer, run = await start_waiting(ada, session)

    response = await sync_to_async(client_for(ada).post)(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code in (200, 202), response.content
    await viewer.until_ended()

    assert viewer.run_status == "cancelled"
    [opened] = viewer.events_of_type("rate_limit_waiting")
    [closed] = viewer.events_of_type("rate_limit_wait")
    assert closed["span_id"] == opened["span_id"]
    assert closed["error"]["code"] == "not_run"
    assert not viewer.events_of_type("agent_message")
    done = await sync_to_async(get)(ada, f"/api/runs/{run.pk}/spans/")
    [wait] = waits(done["spans"])
    assert (wait["status"], wait["end_seq"]) == ("error", closed["seq"])
    assert viewer.status is not None and viewer.status["waiting_for"] is None
