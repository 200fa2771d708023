"""An eval run's live progress over ``/ws/evals/<id>/``: a snapshot first, then
updates as cases change, to the end; its owner's alone; client frames validated."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User

from studio import evals, runs
from studio.asgi import application
from studio.models.evals import EvalRun
from tests.support.eval_runs import case, echo_agent, make_dataset
from tests.support.live import (
    TIMEOUT_S,
    open_socket,
    run_manager,  # noqa: F401  (an autouse fixture)
)

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def slow_eval(owner: User, *, latency_s: float = 0.2) -> EvalRun:
    agent = echo_agent(owner, latency_s=latency_s)
    cases = [case(f"c{i}", f"m{i}", expect="m0") for i in range(3)]
    dataset = make_dataset(owner, "live", cases)
    return evals.create_eval(owner, agent=agent, dataset=dataset, concurrency=1)


async def frame(communicator: WebsocketCommunicator) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(await communicator.receive_from(TIMEOUT_S))
    return loaded


async def connect(eval_id: object, user: User | None) -> WebsocketCommunicator:
    communicator, connected = await open_socket(
        application, None, user, path=f"/ws/evals/{eval_id}/"
    )
    assert connected
    return communicator


async def test_a_snapshot_then_updates_as_cases_finish_until_the_eval_ends(ada: User) -> None:
    runs.executor().start()
    eval_run = await slow_eval(ada)
    socket = await connect(eval_run.pk, ada)
    snapshot = await frame(socket)
    assert snapshot["type"] == "snapshot"
    assert snapshot["eval"]["id"] == str(eval_run.pk)
    assert [r["case_name"] for r in snapshot["results"]] == ["c0", "c1", "c2"]
    assert snapshot["eval"]["summary"]["total"] == 3
    statuses: dict[str, str] = {r["id"]: r["status"] for r in snapshot["results"]}
    finished_seen = []
    while True:
        update = await frame(socket)
        assert update["type"] == "update"
        for result in update["results"]:
            statuses[result["id"]] = result["status"]
            if result["status"] in ("passed", "failed"):
                finished_seen.append(result["case_name"])
        if update["eval"]["status"] == "succeeded":
            break
    assert finished_seen == ["c0", "c1", "c2"]  # one at a time (concurrency 1), in order
    assert sorted(statuses.values()) == ["failed", "failed", "passed"]
    assert update["eval"]["summary"]["done"] == 3
    await socket.send_to(text_data=json.dumps({"type": "snapshot"}))
    again = await frame(socket)
    assert again["type"] == "snapshot" and again["eval"]["status"] == "succeeded"
    await socket.send_to(text_data=json.dumps({"type": "cancel", "extra": 1}))
    refused = await frame(socket)
    assert refused["type"] == "error" and refused["code"] == "invalid"
    await socket.disconnect()


async def test_other_users_and_strangers_are_refused(ada: User, bob: User) -> None:
    eval_run = await slow_eval(ada, latency_s=0.0)
    for user, code in ((bob, 4404), (None, 4401)):
        socket = await connect(eval_run.pk, user)
        closed = await socket.receive_output(TIMEOUT_S)
        assert closed == {"type": "websocket.close", "code": code}
    socket = await connect("not-a-uuid", ada)
    assert (await socket.receive_output(TIMEOUT_S))["code"] == 4404
