"""Scaled out for real: two Daphne servers and a ``run_worker`` process on one throwaway
PostgreSQL database and a Redis channel layer. Runs are started through one server,
executed by the worker, and watched from both servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
import redis

from tests.scale.cluster import (
    ENDED,
    Cluster,
    Worker,
    assert_every_seq_in_order,
    careful_agent,
    executor_of,
    redis_url,
    scripted_agent,
    start_cluster,
    task_of,
    wait_until,
    watch_all,
)

# Starting PostgreSQL-backed servers and a worker takes tens of seconds on a busy machine.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    agents = [
        scripted_agent("steady", 60, 0.0),
        scripted_agent("long", 900, 0.01),
        careful_agent("careful"),
    ]
    # A short lease, so a killed worker's run is recovered within seconds.
    with start_cluster(tmp_path_factory.mktemp("scale"), agents, servers=2, lease_s=2) as started:
        yield started


async def test_a_worker_run_started_on_one_server_reaches_a_hundred_viewers_on_both_in_order(
    cluster: Cluster, worker: Worker
) -> None:
    api = cluster.api(0)
    session_id = api.new_session(cluster.setup["agents"]["steady"])
    viewers = cluster.viewers(session_id, 100)
    await asyncio.gather(*(viewer.open() for viewer in viewers))

    run = api.send(session_id, "play")
    executor = asyncio.to_thread(
        wait_until, lambda: executor_of(cluster.database_url, run["id"]), 30, "a claim"
    )
    owner, _ = await asyncio.gather(executor, watch_all(viewers, lambda v: v.ended, 150))

    assert f":{worker.pid}:" in owner  # the worker executed it, not a server
    assert api.run(run["id"])["status"] == "succeeded"
    stored = api.events(session_id)
    assert len(stored) > 120
    # The final status follows the run's last event: a viewer that saw the run end
    # already has every event, in order.
    assert [viewer.last_seq for viewer in viewers] == [len(stored)] * len(viewers)
    assert_every_seq_in_order(viewers, stored)
    for viewer in viewers:
        await viewer.close()


async def test_a_killed_workers_run_is_interrupted_losing_no_event_and_the_session_runs_again(
    cluster: Cluster, worker: Worker
) -> None:
    api = cluster.api(0)
    session_id = api.new_session(cluster.setup["agents"]["long"])
    viewers = cluster.viewers(session_id, 4)
    await asyncio.gather(*(viewer.open() for viewer in viewers))
    run = api.send(session_id, "play")
    await watch_all(viewers, lambda v: v.last_seq >= 30, 30)
    assert f":{worker.pid}:" in executor_of(cluster.database_url, run["id"])

    worker.kill()
    interrupted = await asyncio.to_thread(api.wait_for_run, run["id"], {"interrupted"}, 15)
    assert interrupted["error_code"] == "interrupted"
    # The sweep also closes the task the dead worker left recorded as running.
    assert task_of(cluster.database_url, run["id"]) == ("FAILED", "studio.runs.queue.WorkerLost")
    stored = api.events(session_id)
    await watch_all(viewers, lambda v: v.ended and v.last_seq >= len(stored), 15)
    assert_every_seq_in_order(viewers, stored)
    assert stored[-1]["type"] == "error"
    assert stored[-1]["error"]["code"] == "interrupted"

    # A new worker takes the next run on the same session, and cancelling reaches it.
    replacement = await asyncio.to_thread(cluster.new_worker)
    try:
        again = api.send(session_id, "again")
        await watch_all(viewers, lambda v: v.last_seq >= len(stored) + 10, 30)
        assert f":{replacement.pid}:" in executor_of(cluster.database_url, again["id"])
        api.ok("POST", f"/api/runs/{again['id']}/cancel/")
        cancelled = await asyncio.to_thread(api.wait_for_run, again["id"], {"cancelled"}, 15)
        assert cancelled["status"] == "cancelled"
        # The worker notices, stops the run, stores its cancelled event and lets go.
        await asyncio.to_thread(
            wait_until,
            lambda: executor_of(cluster.database_url, again["id"]) == "",
            15,
            "the worker to let go of the cancelled run",
        )
        stored = api.events(session_id)
        assert stored[-1]["error"]["code"] == "cancelled"
        await watch_all(viewers, lambda v: v.last_seq >= len(stored), 15)
        assert_every_seq_in_order(viewers, stored)
    finally:
        for viewer in viewers:
            await viewer.close()


async def test_a_paused_redis_delays_no_stored_event_and_viewers_catch_up(
    cluster: Cluster, worker: Worker
) -> None:
    api = cluster.api(1)
    session_id = api.new_session(cluster.setup["agents"]["steady"])
    viewers = cluster.viewers(session_id, 6)
    await asyncio.gather(*(viewer.open() for viewer in viewers))
    run = api.send(session_id, "play")
    await watch_all(viewers, lambda v: v.last_seq >= 20, 30)

    # CLIENT PAUSE blocks every other client of this (shared) Redis for 3 s without
    # stopping the server: the worker's publishes and the servers' receives stall.
    redis.Redis.from_url(redis_url()).execute_command("CLIENT", "PAUSE", "3000", "ALL")
    paused_at = max(viewer.last_seq for viewer in viewers)

    finished = await asyncio.to_thread(api.wait_for_run, run["id"], {"succeeded", "failed"}, 60)
    assert finished["status"] == "succeeded"
    stored = api.events(session_id)
    assert len(stored) > paused_at
    await watch_all(viewers, lambda v: v.ended and v.last_seq >= len(stored), 30)
    assert_every_seq_in_order(viewers, stored)
    for viewer in viewers:
        await viewer.close()


async def test_an_approval_decided_through_the_other_server_reaches_the_worker_and_the_run_ends(
    cluster: Cluster, worker: Worker
) -> None:
    starter, other = cluster.api(0), cluster.api(1)
    session_id = starter.new_session(cluster.setup["agents"]["careful"])
    approvals = f"/api/sessions/{session_id}/approvals/"
    run = starter.send(session_id, "what is 6 * 7?")
    requested = await asyncio.to_thread(
        wait_until,
        lambda: [e for e in starter.events(session_id) if e["type"] == "approval_request"],
        60,
        "the approval request",
    )
    approval = requested[0]["approval"]
    assert f":{worker.pid}:" in executor_of(cluster.database_url, run["id"])
    decision = {"call_id": approval["call_id"], "args_hash": approval["args_hash"]}

    # Waiting, but not for these arguments: the worker's broker refuses, through the relay.
    status, body = other.call(
        "POST", approvals, {**decision, "args_hash": "0" * 64, "decision": "approve"}
    )
    assert (status, body["code"]) == (409, "approval_not_pending")
    # No such call waits: the server answers from the database.
    status, body = other.call(
        "POST", approvals, {**decision, "call_id": "nope", "decision": "approve"}
    )
    assert (status, body["code"]) == (409, "approval_not_pending")
    assert starter.run(run["id"])["status"] == "running"

    assert other.call("POST", approvals, {**decision, "decision": "approve"}) == (204, None)
    finished = await asyncio.to_thread(starter.wait_for_run, run["id"], ENDED, 60)
    assert finished["status"] == "succeeded"
    stored = starter.events(session_id)
    [decided] = [e for e in stored if e["type"] == "approval_decision"]
    assert (decided["approval"]["decision"], decided["approval"]["decided_by"]) == (
        "approve",
        "scale",
    )
    [answered] = [e for e in stored if e["type"] == "tool_response"]
    assert answered["parts"][0]["result"] == "42"
    # Decided already: a second decision is refused.
    status, body = starter.call("POST", approvals, {**decision, "decision": "deny"})
    assert (status, body["code"]) == (409, "approval_not_pending")


async def test_an_approval_sent_over_the_other_servers_socket_reaches_the_worker(
    cluster: Cluster, worker: Worker
) -> None:
    api = cluster.api(0)
    session_id = api.new_session(cluster.setup["agents"]["careful"])
    [viewer] = [v for v in cluster.viewers(session_id, 2) if v.server is cluster.servers[1]]
    await viewer.open()
    run = api.send(session_id, "what is 6 * 7?")
    await viewer.watch_until(lambda v: any(e["type"] == "approval_request" for e in v.events), 60)
    [requested] = [e for e in viewer.events if e["type"] == "approval_request"]
    approval = requested["approval"]
    assert viewer.ws is not None
    frame = {"type": "approval", "call_id": approval["call_id"], "args_hash": approval["args_hash"]}
    await viewer.ws.send(json.dumps({**frame, "decision": "deny", "reason": "not today"}))
    await viewer.watch_until(lambda v: v.ended, 60)
    finished = api.run(run["id"])
    assert finished["status"] == "succeeded"
    [decided] = [e for e in api.events(session_id) if e["type"] == "approval_decision"]
    assert (decided["approval"]["decision"], decided["approval"]["reason"]) == ("deny", "not today")
    await viewer.close()
