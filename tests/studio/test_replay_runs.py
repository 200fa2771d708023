"""Replaying runs through the API: every demo agent's run replays to the same events and
state on its recorded outputs alone; another version goes live where it diverges; and
another user's run is not there (404)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command

from agents_core import events as core_events
from agents_core.replay import by_branch, comparable, is_divergence
from studio import runs, services
from studio.agents.demo import DEMO_MODEL
from studio.asgi import application
from studio.models import Agent, Event, ModelConfig, Run, Session
from tests.studio.conftest import client_for, make_agent, make_session, signed_in
from tests.support.live import (
    ENDED,
    eventually,
    open_socket,
    run_manager,  # noqa: F401  (an autouse fixture)
)

pytestmark = pytest.mark.django_db(transaction=True)

DEMO_RUNS = [
    ("calculator", "what is (12 + 30) * 2?"),
    ("pipeline", "solar power"),
    ("fan_out", "a new cafe"),
    ("refine_loop", "a slogan"),
    ("helpdesk", "what is 6 * 7?"),
    ("helpdesk", "write a poem about rain"),
]
NOT_RECORDED = {"script": [{"text": "a model call the replay should not have made"}]}


@pytest.fixture
def demo(transactional_db: None) -> User:
    call_command("seed_demo", "--force", stdout=io.StringIO())
    ModelConfig.objects.filter(name=DEMO_MODEL).update(options={})  # answers at once
    return User.objects.get(username="demo")


@pytest.fixture(autouse=True)
async def executing() -> None:
    """Runs execute on this test's loop, as in a server (``run_manager`` stops them)."""
    runs.executor().start()


@sync_to_async
def start(owner: User, agent_name: str, text: str) -> Run:
    agent = Agent.objects.get(owner=owner, name=agent_name)
    return services.start_run(services.start_session(owner, agent), text)


async def ended(run_id: Any) -> Run:
    async def check() -> Run | None:
        run = await Run.objects.aget(pk=run_id)
        return run if run.status in ENDED else None

    return await eventually(check)


@sync_to_async
def events_of(session_id: Any) -> list[core_events.Event]:
    return [row.to_core() for row in Event.objects.filter(session_id=session_id).order_by("seq")]


@sync_to_async
def post_replay(user: User, run: Run, **body: Any) -> Any:
    return client_for(user).post(f"/api/runs/{run.pk}/replay/", body, format="json")


@sync_to_async
def forget_the_models(owner: User) -> None:
    """Every model of ``owner`` now answers something else: a replay that called one
    would not reproduce the record."""
    ModelConfig.objects.filter(owner=owner).update(options=NOT_RECORDED)


@pytest.mark.parametrize(("agent", "message"), DEMO_RUNS)
async def test_every_demo_run_replays_to_the_same_events_and_state(
    demo: User, agent: str, message: str
) -> None:
    original = await ended((await start(demo, agent, message)).pk)
    assert original.status == "succeeded"
    await forget_the_models(demo)

    response = await post_replay(demo, original)

    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["replay_of"], body["status"], body["message"]) == (
        str(original.pk),
        "queued",
        message,
    )
    replay = await ended(body["id"])
    assert replay.status == "succeeded"
    assert replay.session_id != original.session_id
    recorded, replayed = await events_of(original.session_id), await events_of(replay.session_id)
    assert by_branch(comparable(replayed)) == by_branch(comparable(recorded))
    # No model was called: the replay spent nothing, and says so on every answer.
    assert original.cost > 0 and original.input_tokens > 0
    spent = (replay.cost, replay.cost_complete, replay.input_tokens, replay.output_tokens)
    assert spent == (0, True, 0, 0)
    answers = [e for e in replayed if e.type is core_events.EventType.AGENT_MESSAGE]
    assert answers and all(e.replayed and e.usage is None for e in answers if not e.partial)
    sessions = Session.objects.filter(pk__in=[original.session_id, replay.session_id])
    states = {s.pk: s.state async for s in sessions}
    assert states[replay.session_id] == states[original.session_id]
    owners = {s.owner_id async for s in sessions}
    assert owners == {demo.pk}


async def test_another_version_replays_until_it_diverges_then_runs_live(demo: User) -> None:
    original = await ended((await start(demo, "calculator", "what is 2 + 2?")).pk)
    agent = await Agent.objects.aget(owner=demo, name="calculator")
    spec = {
        **(await sync_to_async(lambda: agent.current_version.spec)()),
        "instruction": "Use the calculator tool.\nResult: Worked out: {last_tool_result}",
    }
    await sync_to_async(services.update_agent)(agent, spec=spec)
    newer = await sync_to_async(lambda: Agent.objects.get(pk=agent.pk).current_version)()

    response = await post_replay(demo, original, agent_version=str(newer.pk))

    assert response.status_code == 202, response.content
    replay = await ended(response.json()["id"])
    events = await events_of(replay.session_id)
    [marker] = [e for e in events if is_divergence(e)]
    assert marker.text == (
        "replay diverged here: 'calculator' has another instruction than the recorded version"
    )
    assert events[-2].text == "Worked out: 4"  # live from the marker on: the new instruction
    assert replay.status == "succeeded"
    # Live calls are counted and priced as any run's (here all: the first diverged).
    live = [e.usage for e in events if e.type is core_events.EventType.AGENT_MESSAGE]
    assert live and all(usage is not None for usage in live)
    assert replay.cost > 0 and replay.input_tokens == sum(u.input_tokens for u in live if u)


async def test_a_replay_replays_too(demo: User) -> None:
    original = await ended((await start(demo, "pipeline", "solar power")).pk)
    await forget_the_models(demo)
    first = await ended((await post_replay(demo, original)).json()["id"])

    again = await ended((await post_replay(demo, first)).json()["id"])

    assert again.status == "succeeded" and again.cost == 0
    recorded, replayed = await events_of(original.session_id), await events_of(again.session_id)
    assert by_branch(comparable(replayed)) == by_branch(comparable(recorded))


async def test_replay_refuses_a_version_of_another_agent(demo: User) -> None:
    original = await ended((await start(demo, "calculator", "what is 2 + 2?")).pk)
    pipeline = await sync_to_async(
        lambda: Agent.objects.get(owner=demo, name="pipeline").current_version
    )()

    refused = await post_replay(demo, original, agent_version=str(pipeline.pk))

    assert refused.status_code == 400, refused.content
    assert "agent_version" in str(refused.json())
    assert not await Run.objects.filter(replay_of=original).aexists()


async def test_another_users_run_cannot_be_replayed_or_seen(ada: User, bob: User) -> None:
    agent = await sync_to_async(make_agent)(ada)
    session = await sync_to_async(make_session)(ada, agent)
    run = await ended((await sync_to_async(services.start_run)(session, "hi")).pk)

    response = await post_replay(bob, run)

    assert response.status_code == 404
    assert not await Run.objects.filter(replay_of=run).aexists()
    mine = await post_replay(ada, run)
    assert mine.status_code == 202
    replay_session = mine.json()["session"]
    page = await sync_to_async(lambda: signed_in(bob).get(f"/sessions/{replay_session}/"))()
    assert page.status_code == 404
    communicator, connected = await open_socket(application, replay_session, bob)
    assert connected
    closed = await communicator.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4404}
    own = await sync_to_async(lambda: signed_in(ada).get(f"/sessions/{replay_session}/"))()
    assert own.status_code == 200
    assert f"/sessions/{session.pk}/" in own.content.decode()  # "Replay of" its original
