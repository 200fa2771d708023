"""A model call seen live: tried again after a failure, each ``model_retry`` reaches the
viewer as it is stored, and the status says the run is retrying its model until the
call answers; slow to answer, it shows itself to a viewer who joins while it waits.
A real run on the real ASGI application, against the in-repo OpenAI-compatible
server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core import events as core_events
from studio.asgi import application
from studio.live import Publisher
from studio.models import Session
from studio.runs.published import SHOW_AGAIN_AFTER_S, Execution
from tests.studio.conftest import make_agent, make_session, remote_model
from tests.support.live import run_manager, watch  # noqa: F401  (autouse)
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@sync_to_async
def session_on(owner: User, server: OpenAIServer) -> Session:
    """A session of an agent whose model is ``server``."""
    remote_model(owner, server.base_url)
    return make_session(owner, make_agent(owner, "patient", model="remote"))


async def test_the_status_says_the_model_is_retried_until_the_call_answers(
    ada: User, model_server: OpenAIServer
) -> None:
    model_server.fail(503, times=2)
    model_server.reply("Third time lucky.")
    session = await session_on(ada, model_server)
    viewer = await watch(application, session, ada)

    await viewer.send({"type": "user_message", "text": "hello"})
    await viewer.until_ended()

    assert viewer.run_status == "succeeded"
    kinds = [e["type"] for e in viewer.events]
    assert kinds.count("model_retry") == 2
    assert kinds.index("model_retry") < kinds.index("agent_message")
    waited = [s["waiting_for"] for s in viewer.statuses if s["waiting_for"] is not None]
    # While the call was tried again the run said so (one status: sent as it changes);
    # once answered, it waited on its model no more.
    assert waited == ["model", "retry", "model"]
    assert viewer.statuses[-1]["waiting_for"] is None


def calls_shown(viewer: Any) -> list[dict[str, Any]]:
    """The partial events without parts a viewer got: model calls showing themselves."""
    return [f["event"] for f in viewer.partials if not f["event"]["parts"]]


async def test_a_viewer_who_joins_while_a_call_is_in_flight_is_shown_the_call(
    ada: User, model_server: OpenAIServer
) -> None:
    """A call that showed itself before a viewer joined is sent again to that viewer:
    partial events are not in the backlog a viewer catches up on."""
    model_server.reply("Worth the wait.", hold_after=0)
    session = await session_on(ada, model_server)
    first = await watch(application, session, ada)
    await first.send({"type": "user_message", "text": "hello"})
    await first.until(lambda v: bool(calls_shown(v)))
    [call] = calls_shown(first)

    late = await watch(application, session, ada)
    await late.until(lambda v: bool(calls_shown(v)))

    assert [e["type"] for e in late.events] == ["user_message", "agent_start"]
    assert calls_shown(late) == [call]  # the same call: its span, from when it started
    model_server.release()
    await late.until_ended()
    [answer] = [e for e in late.events if e["type"] == "agent_message"]
    assert (answer["span_id"], answer["started_at"]) == (call["span_id"], call["started_at"])
    assert calls_shown(first) == [call]  # sent again to the session's viewers: one kept


async def test_viewers_joining_together_share_one_sending_of_the_calls_shown() -> None:
    """Each joining viewer asks; the calls go to every viewer of the session, so the
    asks of viewers joining together are answered by one sending, not one each."""
    sent: list[tuple[core_events.Event, int]] = []

    class Recorder:  # the publisher's one method the execution calls
        def event(self, event: core_events.Event, after_seq: int) -> None:
            sent.append((event, after_seq))

    execution = Execution(uuid.uuid4(), last_seq=2, publisher=cast(Publisher, Recorder()))
    call = core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="i",
        session_id="s",
        author="patient",
        partial=True,
        span_id="c1",
    )
    execution.calls_shown["c1"] = call
    for _ in range(3):
        execution.show_calls()
    await asyncio.sleep(SHOW_AGAIN_AFTER_S * 3)
    assert sent == [(call, 2)]
    execution.show_calls()  # a viewer joining later: sent again
    await asyncio.sleep(SHOW_AGAIN_AFTER_S * 3)
    assert sent == [(call, 2), (call, 2)]
