"""Issue 23's parking, on a real Daphne with the real langchain-openai client: a run
waiting on a person holds nothing, so kill -9 and a restart lose nothing; the decision,
taken on the restarted server, lets the same run go on as the same call, with the
edited arguments. A time-out fires once, from the request, across a restart."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.browser import *  # noqa: F403  (the api fixture)
from tests.e2e.browser import Api, until
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.openai_server import OpenAIServer, ToolCallReply

ENV = {"STUDIO_RUN_LEASE_S": "1", "STUDIO_PARKED_SWEEP_S": "0.2"}
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
_names = itertools.count(1)


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    data = tmp_path_factory.mktemp("studio") / "data"
    with daphne_server(data, ENV, template=seeded_data) as server:
        yield server


@pytest.fixture
def model() -> Iterator[OpenAIServer]:
    """The agent's model, in the test process: its script outlives the server."""
    with OpenAIServer(models=["fake-model"]) as server:
        server.reply(tool_calls=[ToolCallReply("calculator", {"expression": "2 + 3"}, id="k1")])
        server.reply("The answer is 42.")
        yield server


def careful_session(api: Api, model: OpenAIServer, **approval: Any) -> str:
    """A new session of an agent whose calculator calls need a person."""
    n = next(_names)
    api.post(
        "/api/models/",
        {
            "name": f"remote_{n}",
            "provider": "openai_compatible",
            "model": "fake-model",
            "base_url": model.base_url,
        },
    )
    tool = {"name": "calculator", "requires_approval": True, **approval}
    spec = {"name": f"careful_{n}", "model": f"remote_{n}", "tools": [tool]}
    agent = api.agent(spec)
    return str(api.post("/api/sessions/", {"agent": agent["id"]})["id"])


def parked(api: Api, session_id: str) -> dict[str, Any]:
    """Start a run and wait until it parked on its calculator call."""
    run: dict[str, Any] = api.post(f"/api/sessions/{session_id}/messages/", {"text": "2 + 3?"})
    until(lambda: api.get(f"/api/runs/{run['id']}/")["status"] == "waiting", "parked")
    return run


def kinds(api: Api, session_id: str) -> list[str]:
    return [e["type"] for e in api.events(session_id)]


def test_a_parked_run_survives_a_kill_and_goes_on_as_decided_on_the_new_server(
    pages_server: DaphneServer, api: Api, model: OpenAIServer
) -> None:
    session_id = careful_session(api, model)
    run = parked(api, session_id)
    assert kinds(api, session_id)[-2:] == ["approval_request", "run_parked"]
    assert len(model.requests) == 1

    pages_server.kill()  # nothing executes the run: nothing is lost
    pages_server.restart()
    fresh = Api(pages_server.url)
    # The restarted server's recovery leaves it alone: it waits, held by nobody.
    time.sleep(1.5)  # a lease and more: an executing run would be interrupted by now
    assert fresh.get(f"/api/runs/{run['id']}/")["status"] == "waiting"
    [item] = fresh.get("/api/approvals/")["results"]
    assert (item["session_id"], item["call_id"]) == (session_id, "k1")

    decision = {
        "session": session_id,
        "call_id": "k1",
        "args_hash": item["args_hash"],
        "decision": "approve",
        "edited_args": {"expression": "6 * 7"},
    }
    [result] = fresh.post("/api/approvals/decide/", {"decisions": [decision]})["results"]
    assert result["decided"] is True, result
    until(lambda: fresh.get(f"/api/runs/{run['id']}/")["status"] in ENDED, "ended")
    ended = fresh.get(f"/api/runs/{run['id']}/")
    assert ended["status"] == "succeeded", ended["error_message"]

    stored = fresh.events(session_id)
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    assert {e["invocation_id"] for e in stored} == {run["invocation_id"] or ended["invocation_id"]}
    types = [e["type"] for e in stored]
    assert (types.count("approval_request"), types.count("run_parked")) == (1, 1)
    [response] = [e for e in stored if e["type"] == "tool_response"]
    assert response["parts"][0]["result"] == "42"  # the tool ran the edited arguments
    # The model was asked twice in all: the call that parked was not asked again.
    assert len(model.requests) == 2
    tools = [m for m in model.requests[-1].messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tools] == [("k1", "42")]
    assert stored[-2]["parts"][0]["text"] == "The answer is 42."


def test_a_time_out_decides_once_from_the_request_across_a_restart(
    pages_server: DaphneServer, api: Api, model: OpenAIServer
) -> None:
    session_id = careful_session(api, model, approval_timeout_s=1.5, approval_on_timeout="approve")
    run = parked(api, session_id)
    request = next(e for e in api.events(session_id) if e["type"] == "approval_request")
    assert (request["approval"]["timeout_s"], request["approval"]["on_timeout"]) == (
        1.5,
        "approve",
    )
    pages_server.kill()  # down while the time runs out
    time.sleep(2.0)
    pages_server.restart()
    fresh = Api(pages_server.url)
    until(lambda: fresh.get(f"/api/runs/{run['id']}/")["status"] in ENDED, "ended")
    assert fresh.get(f"/api/runs/{run['id']}/")["status"] == "succeeded"

    decisions = fresh.get(f"/api/approvals/decisions/?session={session_id}")
    assert [(d["channel"], d["decision"], d["call_id"]) for d in decisions] == [
        ("timeout", "approve", "k1")
    ]
    decided = next(e for e in fresh.events(session_id) if e["type"] == "approval_decision")
    assert (decided["approval"]["decided_by"], decided["approval"]["reason"]) == (
        "timeout",
        "nobody decided within 1.5s",
    )
    late = {
        "session": session_id,
        "call_id": "k1",
        "args_hash": request["approval"]["args_hash"],
        "decision": "deny",
    }
    with pytest.raises(AssertionError, match=r"409 .*approval_decided.*by time-out"):
        fresh.post("/api/approvals/decide/", {"decisions": [late]})
