"""Worker runs on an OpenAI-compatible model: ``run_worker`` processes execute their runs
one after another on one event loop kept for the process, and talk through the real
langchain-openai client to the in-repo OpenAI-compatible server on loopback (which the
test servers' ``STUDIO_OUTBOUND_ALLOWLIST`` admits, ``tests.support.daphne_server``).
A worker's runs share its connection to the model server, so a run pays no new
connection (on a real provider, a TLS handshake) for its model calls."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.scale.cluster import Cluster, Worker, start_cluster
from tests.support.live_client import ENDED, Api
from tests.support.openai_server import OpenAIServer, ToolCallReply

pytestmark = pytest.mark.timeout(300)

MODEL = "test-model"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with start_cluster(tmp_path_factory.mktemp("openai"), [], servers=1, lease_s=30) as started:
        yield started


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(models=[MODEL]) as server:
        yield server


@pytest.fixture
def agent_id(cluster: Cluster, model_server: OpenAIServer) -> str:
    """An agent with the calculator, on a model config of this test's model server."""
    api = cluster.api(0)
    name = f"remote_{model_server.port}"
    model = {
        "name": name,
        "provider": "openai_compatible",
        "base_url": model_server.base_url,
        "model": MODEL,
        "api_key": "sk-scale-0123456789",
    }
    api.ok("POST", "/api/models/", model)
    spec = {
        "name": f"{name}_agent",
        "model": name,
        "instruction": "Use the calculator, then answer.",
        "tools": [{"name": "calculator"}],
    }
    return str(api.ok("POST", "/api/agents/", {"name": spec["name"], "spec": spec})["id"])


def outcome(api: Api, run: dict[str, Any]) -> tuple[str, str, str]:
    """(status, error, the answer stored last) of a run, once it ended."""
    ended = api.wait_for_run(run["id"], ENDED, 60)
    error = f"{ended['error_code']}: {ended['error_message']}" if ended["error_code"] else ""
    answers = [
        "".join(part["text"] for part in event["parts"] if part["kind"] == "text")
        for event in api.events(ended["session"])
        if event["type"] == "agent_message"
    ]
    return ended["status"], error, answers[-1] if answers else ""


def test_twenty_runs_back_to_back_succeed_each_storing_its_models_answer(
    cluster: Cluster, worker: Worker, model_server: OpenAIServer, agent_id: str
) -> None:
    api = cluster.api(0)
    outcomes = []
    for i in range(20):
        model_server.reply(tool_calls=[ToolCallReply("calculator", {"expression": f"{i} * 2"})])
        model_server.reply(f"answer {i}")
        run = api.send(api.new_session(agent_id), f"What is {i} * 2?")
        outcomes.append(outcome(api, run))

    assert outcomes == [("succeeded", "", f"answer {i}") for i in range(20)]
    # Every run's two model calls (the tool call, then the answer) went over the one
    # connection the worker keeps (one per run while it made a loop per run).
    calls = model_server.chat_requests
    assert len(calls) == 40
    assert len({call.client_port for call in calls}) == 1
    assert calls[-1].messages[-1]["content"] == "38"  # the calculator's result


def test_ten_runs_at_once_on_two_workers_succeed_each_storing_its_models_answer(
    cluster: Cluster, worker: Worker, model_server: OpenAIServer, agent_id: str
) -> None:
    second = cluster.new_worker()  # the module's cluster stops it with the others
    api = cluster.api(0)
    for i in range(10):
        model_server.reply(f"answer {i}")
    sessions = [api.new_session(agent_id) for _ in range(10)]

    runs = [api.send(session_id, "What is 6 * 7?") for session_id in sessions]
    with ThreadPoolExecutor(10) as pool:
        outcomes = list(pool.map(lambda run: outcome(api, run), runs))

    assert sorted(outcomes) == sorted(("succeeded", "", f"answer {i}") for i in range(10))
    assert model_server.pending == 0
    assert second.process is not None and second.process.poll() is None


async def test_a_worker_runs_slow_model_call_shows_itself_to_a_viewer_on_the_server(
    cluster: Cluster, worker: Worker, model_server: OpenAIServer, agent_id: str
) -> None:
    """Worker, Redis, server, websocket: a model call that holds its answer reaches a
    viewer live as a partial event without parts, before anything of its answer, on the
    span its stored answer then closes; a viewer who joins later is sent it again (the
    server asks the worker, through the run's relay group)."""
    api = cluster.api(0)
    session_id = api.new_session(agent_id)
    [viewer] = cluster.viewers(session_id, 1)
    await viewer.open()
    model_server.reply("Worth the wait.", hold_after=0)  # the role chunk, then held
    run = api.send(session_id, "Take your time.")
    await asyncio.to_thread(model_server.wait_until_held, 1, timeout=60)
    await viewer.watch_until(lambda v: v.calls_shown, 60)

    [call] = viewer.calls_shown
    assert [e["type"] for e in viewer.events] == ["user_message", "agent_start"]
    [late] = cluster.viewers(session_id, 1)
    await late.open()
    await late.watch_until(lambda v: v.calls_shown, 60)
    assert late.calls_shown == [call]
    model_server.release()
    await viewer.watch_until(lambda v: v.ended, 60)
    assert api.run(run["id"])["status"] == "succeeded"
    [answer] = [e for e in viewer.events if e["type"] == "agent_message"]
    assert answer["parts"][0]["text"] == "Worth the wait."
    assert (call["span_id"], call["started_at"]) == (answer["span_id"], answer["started_at"])
    assert (call["seq"], call["author"]) == (None, answer["author"])
    assert viewer.calls_shown in ([call], [call, call])  # sent again to every viewer
    await late.watch_until(lambda v: v.ended, 60)
    assert late.events == viewer.events
    await viewer.close()
    await late.close()
