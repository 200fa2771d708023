"""How the A2A server follows a task's run (``studio.a2a_endpoint.follow``), in
process with the real channel layer: after its first read it reads the database again
when the run's session's live group carries a stored event or a status, and then only
what its agents said after the last seq it saw; with nothing on the group, its
fallback read every ``STUDIO_LIVE_RESYNC_S`` still sees the run move.

The fallback is set far beyond the guard each wait has (``GUARD_S``), so a snapshot
that arrives within it came by the live group: without the subscription the guard
runs out and the test fails.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from agents_core import events as core_events
from studio import live
from studio.a2a_endpoint import follow
from studio.db import db_sync_to_async
from studio.models import Run, RunStatus, Session
from studio.session_service import append_event_sync
from tests.studio.conftest import make_agent, make_session

pytestmark = pytest.mark.django_db(transaction=True)
GUARD_S = 30.0
INVOCATION = "inv-a2a"


def running(owner: User) -> Run:
    session = make_session(owner, make_agent(owner))
    return Run.objects.create(
        session=session, message="hi", status=RunStatus.RUNNING, invocation_id=INVOCATION
    )


def say(session: Session, text: str) -> None:
    event = core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id=INVOCATION,
        session_id=session.key,
        author="helper",
        parts=[core_events.TextPart(text=text)],
    )
    append_event_sync(session.key, event)


def end(run: Run) -> None:
    say(run.session, "the answer")
    Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED)


async def publish_status(run: Run) -> None:
    status = await db_sync_to_async(live.snapshot)(run.session_id)
    await live.publish(run.session_id, status=status)


def test_a_status_on_the_live_group_wakes_the_follow(ada: User, settings: Any) -> None:
    settings.STUDIO_LIVE_RESYNC_S = 600.0
    settings.STUDIO_MCP_SERVE_RUN_TIMEOUT_S = 600.0
    run = running(ada)
    say(run.session, "working on it")

    async def scenario() -> list[Any]:
        snaps = follow.snapshots(run)
        first = await anext(snaps)
        await db_sync_to_async(end)(run)
        await publish_status(run)
        second = await asyncio.wait_for(anext(snaps), GUARD_S)
        rest = [snap async for snap in snaps]  # settled: nothing more
        return [first, second, rest]

    first, second, rest = async_to_sync(scenario)()
    assert first.status == RunStatus.RUNNING
    assert [text for _, text in first.messages] == ["working on it"]
    assert second.status == RunStatus.SUCCEEDED and second.answer == "the answer"
    assert [text for _, text in second.messages] == ["the answer"]  # only the new one
    assert rest == []


def test_with_nothing_on_the_group_the_fallback_read_still_sees_the_run_move(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_MCP_SERVE_RUN_TIMEOUT_S = 600.0
    settings.STUDIO_LIVE_RESYNC_S = 0.05
    run = running(ada)

    async def scenario() -> Any:
        snaps = follow.snapshots(run)
        await anext(snaps)
        await db_sync_to_async(end)(run)  # and nothing published
        moved = None
        async for moved in snaps:  # noqa: B007 (until it settles)
            pass
        return moved

    moved = async_to_sync(scenario)()
    assert moved.status == RunStatus.SUCCEEDED and moved.answer == "the answer"
