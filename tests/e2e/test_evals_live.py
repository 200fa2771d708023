"""An eval run on a real Daphne, watched with a real websocket client: a snapshot, then
updates as cases finish; kill -9 of the server mid-eval, a restart on the same data,
and the eval goes on where it was (the interrupted case resumed) to its end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.live_client import Api, prepare_live_data

# Short leases: the killed server's case run is found abandoned within a second.
ENV = {"STUDIO_RUN_LEASE_S": "1"}

_DATASET = """
from django.contrib.auth import get_user_model
from studio.models.evals import Dataset, DatasetVersion
owner = get_user_model().objects.get(username="evaluator")
dataset = Dataset.objects.create(owner=owner, name="live")
cases = [
    {"name": f"c{i}", "input": {"turns": [f"m{i}"]}, "expect": {"final_output": f"m{i}"}}
    for i in range(3)
]
dataset.current_version = DatasetVersion.objects.create(dataset=dataset, number=1, cases=cases)
dataset.save()
"""


@pytest.fixture
def server(tmp_path: Path, seeded_data: Path) -> Iterator[DaphneServer]:
    with daphne_server(tmp_path / "data", ENV, template=seeded_data) as started:
        yield started


def setup(server: DaphneServer) -> tuple[Api, str]:
    echo = {
        "spec": {"name": "echo", "model": "echo_model", "instruction": "Echo."},
        "options": {"script": [{"text": "You said: {last_user_message}"}], "latency_s": 1.5},
    }
    made = prepare_live_data(server, "evaluator", [echo])
    server.manage("shell", "-c", _DATASET)
    return Api(server.url, made["token"]), made["cookie"]


async def open_socket(server: DaphneServer, cookie: str, eval_id: str) -> ClientConnection:
    return await connect(
        f"{server.ws_url}/ws/evals/{eval_id}/",
        origin=server.url,  # type: ignore[arg-type]
        additional_headers={"Cookie": f"sessionid={cookie}"},
        open_timeout=10,
    )


async def frames_until(
    ws: ClientConnection, done: Any, statuses: dict[str, str], within: float = 60.0
) -> dict[str, Any]:
    """Read frames, noting each result's status, until ``done(frame)``."""
    async with asyncio.timeout(within):
        while True:
            frame: dict[str, Any] = json.loads(await ws.recv())
            for result in frame.get("results", []):
                statuses[result["case_name"]] = result["status"]
            if done(frame):
                return frame


@pytest.mark.timeout(240)
def test_a_killed_server_mid_eval_picks_it_up_again_after_a_restart(server: DaphneServer) -> None:
    api, cookie = setup(server)
    started = api.ok("POST", "/api/evals/", {"agent": "echo", "dataset": "live", "concurrency": 1})
    eval_id = started["id"]
    statuses: dict[str, str] = {}

    async def before_the_kill() -> None:
        ws = await open_socket(server, cookie, eval_id)
        snapshot = await frames_until(ws, lambda f: f["type"] == "snapshot", statuses)
        assert [r["case_name"] for r in snapshot["results"]] == ["c0", "c1", "c2"]
        # c0 passes; then c1 starts (its run sleeps 1.5 s before it answers)
        await frames_until(ws, lambda f: statuses.get("c1") == "running", statuses)
        await ws.close()

    asyncio.run(before_the_kill())
    assert statuses["c0"] == "passed"
    server.kill()  # c1's run dies with the server, its lease left to expire
    server.start()

    async def after_the_restart() -> dict[str, Any]:
        ws = await open_socket(server, cookie, eval_id)
        ended = await frames_until(ws, lambda f: f["eval"]["status"] != "running", statuses)
        await ws.close()
        return ended

    ended = asyncio.run(after_the_restart())
    assert ended["eval"]["status"] == "succeeded"
    assert statuses == {"c0": "passed", "c1": "passed", "c2": "passed"}
    results = api.ok("GET", f"/api/evals/{eval_id}/results/")["results"]
    assert [r["resumes"] for r in results] == [0, 1, 0]  # c1 went on from its last step
    c1_runs = api.runs(session=results[1]["session"])
    assert sorted(run["status"] for run in c1_runs) == ["interrupted", "succeeded"]
    other = api.call("GET", f"/api/evals/{eval_id}/")
    assert other[0] == 200 and other[1]["summary"]["pass_rate"] == 1.0
