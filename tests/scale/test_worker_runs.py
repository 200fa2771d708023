"""Scaled out for real: two Daphne servers and a ``run_worker`` process on one throwaway
PostgreSQL database and a Redis channel layer. Runs are started through one server,
executed by the worker, and watched from both servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.scale.cluster import (
    ENDED,
    Cluster,
    Worker,
    assert_every_seq_in_order,
    careful_agent,
    executor_of,
    scripted_agent,
    start_cluster,
    task_of,
    wait_until,
    watch_all,
)
from tests.support.daphne_server import DaphneServer
from tests.support.live_client import Api, prepare_live_data
from tests.support.mcp_server import serve_silence

# Starting PostgreSQL-backed servers and a worker takes tens of seconds on a busy machine.
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    agents = [
        scripted_agent("steady", 60, 0.0),
        scripted_agent("long", 900, 0.01),
        careful_agent("careful"),
        scripted_agent("brief", 2, 0.0),
        scripted_agent("slow", 100, 0.05),
    ]
    # A short lease, so a killed worker's run is recovered within seconds. Redis through
    # a proxy, to pause it for this cluster alone and count the connections it opens.
    data = tmp_path_factory.mktemp("scale")
    with start_cluster(data, agents, servers=2, lease_s=2, through_proxy=True) as started:
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


async def test_one_worker_executes_runs_at_once_and_a_kill_interrupts_each_losing_no_event(
    cluster: Cluster, worker: Worker
) -> None:
    """A run mostly waits on its model: a worker executes several at once on its loop,
    each reaching its viewers in order. Killed, it leaves each to the lease sweep."""
    api = cluster.api(0)
    sessions = [api.new_session(cluster.setup["agents"]["slow"]) for _ in range(3)]
    viewers = [cluster.viewers(session_id, 2) for session_id in sessions]
    everyone = [viewer for pair in viewers for viewer in pair]
    await asyncio.gather(*(viewer.open() for viewer in everyone))
    runs = [api.send(session_id, "play") for session_id in sessions]

    def executors() -> set[str]:
        return {executor_of(cluster.database_url, run["id"]) for run in runs}

    # One at a time, the second run would wait for the first's 100 steps to end.
    await watch_all(everyone, lambda v: v.last_seq >= 10, 30)
    owners = executors()
    assert len(owners) == 1 and f":{worker.pid}:" in owners.pop()

    worker.kill()
    for run in runs:
        ended = await asyncio.to_thread(api.wait_for_run, run["id"], {"interrupted"}, 15)
        assert ended["error_code"] == "interrupted"
        lost = ("FAILED", "studio.runs.queue.WorkerLost")
        assert task_of(cluster.database_url, run["id"]) == lost
    for session_id, pair in zip(sessions, viewers, strict=True):
        stored = api.events(session_id)
        last = len(stored)
        await watch_all(pair, lambda v: v.ended and v.last_seq >= last, 15)  # noqa: B023
        assert_every_seq_in_order(pair, stored)
        assert stored[-1]["error"]["code"] == "interrupted"
    for viewer in everyone:
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
    assert (stored[0]["type"], stored[0]["parts"][0]["text"]) == ("user_message", "play")

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


async def test_a_worker_killed_before_its_runner_started_leaves_the_users_message_stored(
    cluster: Cluster, worker: Worker
) -> None:
    api = cluster.api(0)
    with serve_silence() as silence:
        session_id = api.new_session(api.hung_agent("hung", "careful_model", silence.url))
        viewers = cluster.viewers(session_id, 4)
        await asyncio.gather(*(viewer.open() for viewer in viewers))
        run = api.send(session_id, "are you there?")
        # Claimed, and waiting for its MCP server: the runner has not started.
        assert await asyncio.to_thread(silence.connected.wait, 60)
        assert f":{worker.pid}:" in executor_of(cluster.database_url, run["id"])
        worker.kill()
        interrupted = await asyncio.to_thread(api.wait_for_run, run["id"], {"interrupted"}, 15)
    assert interrupted["error_code"] == "interrupted"
    stored = api.events(session_id)
    assert [(e["seq"], e["type"]) for e in stored] == [(1, "user_message"), (2, "error")]
    user, error = stored
    assert user["parts"][0]["text"] == "are you there?"
    assert error["error"]["code"] == "interrupted"
    assert error["invocation_id"] == user["invocation_id"]
    await watch_all(viewers, lambda v: v.ended and v.last_seq >= len(stored), 15)
    assert_every_seq_in_order(viewers, stored)
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

    # The proxy holds every byte between the cluster and Redis for 3 s, as CLIENT PAUSE
    # would without pausing other tests' clients: the worker's publishes and the
    # servers' receives stall.
    assert cluster.proxy is not None
    pausing = asyncio.ensure_future(asyncio.to_thread(cluster.proxy.stall, 3.0))
    paused_at = max(viewer.last_seq for viewer in viewers)

    finished = await asyncio.to_thread(api.wait_for_run, run["id"], {"succeeded", "failed"}, 60)
    await pausing
    assert finished["status"] == "succeeded"
    stored = api.events(session_id)
    assert len(stored) > paused_at
    await watch_all(viewers, lambda v: v.ended and v.last_seq >= len(stored), 30)
    assert_every_seq_in_order(viewers, stored)
    for viewer in viewers:
        await viewer.close()


async def test_a_run_parked_on_a_person_frees_its_worker_and_a_decision_on_the_other_server_ends_it(
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
    # Parked: the worker let go of it (no owner, no lease) and is free for other runs.
    await asyncio.to_thread(starter.wait_for_run, run["id"], {"waiting"}, 60)
    assert executor_of(cluster.database_url, run["id"]) == ""
    decision = {"call_id": approval["call_id"], "args_hash": approval["args_hash"]}

    # Waiting, but not with these arguments.
    status, body = other.call(
        "POST", approvals, {**decision, "args_hash": "0" * 64, "decision": "approve"}
    )
    assert (status, body["code"]) == (409, "approval_stale")
    # No such call waits.
    status, body = other.call(
        "POST", approvals, {**decision, "call_id": "nope", "decision": "approve"}
    )
    assert (status, body["code"]) == (409, "approval_not_pending")
    assert starter.run(run["id"])["status"] == "waiting"

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
    assert (status, body["code"]) == (409, "approval_decided")


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


async def test_two_users_runs_on_two_workers_waiting_on_the_same_call_id_are_decided_apart(
    cluster: Cluster, worker: Worker
) -> None:
    """Call ids come from the model: the scripted one says call_1 in every run."""
    admin = DaphneServer(cluster.servers[0].data_dir, dict(cluster.env))
    bob = await asyncio.to_thread(prepare_live_data, admin, "scale_bob", [careful_agent("careful")])
    second = Worker({**cluster.servers[0].environment()})
    cluster.workers.append(second)
    await asyncio.to_thread(second.start)
    try:
        apis = [cluster.api(0), Api(cluster.servers[1].url, bob["token"])]
        agents = [cluster.setup["agents"]["careful"], bob["agents"]["careful"]]
        sessions = [api.new_session(agent) for api, agent in zip(apis, agents, strict=True)]
        started = [api.send(s, "what is 6 * 7?") for api, s in zip(apis, sessions, strict=True)]
        approvals = [
            await asyncio.to_thread(_approval_requested, api, s)
            for api, s in zip(apis, sessions, strict=True)
        ]
        assert approvals[0]["call_id"] == approvals[1]["call_id"]
        for api, run in zip(apis, started, strict=True):  # parked: neither worker holds one
            await asyncio.to_thread(api.wait_for_run, run["id"], {"waiting"}, 60)
            assert executor_of(cluster.database_url, run["id"]) == ""

        assert _decide(apis[1], sessions[1], approvals[1], "deny") == (204, None)
        await asyncio.to_thread(apis[1].wait_for_run, started[1]["id"], ENDED, 60)
        assert apis[0].run(started[0]["id"])["status"] == "waiting"  # still waits on its own
        assert _decide(apis[0], sessions[0], approvals[0], "approve") == (204, None)
        finished = [
            await asyncio.to_thread(api.wait_for_run, run["id"], ENDED, 60)
            for api, run in zip(apis, started, strict=True)
        ]
        assert [run["status"] for run in finished] == ["succeeded", "succeeded"]
        decided = [
            next(e for e in api.events(s) if e["type"] == "approval_decision")["approval"]
            for api, s in zip(apis, sessions, strict=True)
        ]
        assert [(d["decision"], d["decided_by"]) for d in decided] == [
            ("approve", "scale"),
            ("deny", "scale_bob"),
        ]
    finally:
        second.stop()


def _approval_requested(api: Api, session_id: str) -> dict[str, Any]:
    requested = wait_until(
        lambda: [e for e in api.events(session_id) if e["type"] == "approval_request"],
        60,
        "the approval request",
    )
    approval: dict[str, Any] = requested[0]["approval"]
    return approval


def _decide(api: Api, session_id: str, approval: dict[str, Any], verdict: str) -> tuple[int, Any]:
    body = {"call_id": approval["call_id"], "args_hash": approval["args_hash"], "decision": verdict}
    return api.call("POST", f"/api/sessions/{session_id}/approvals/", body)


def test_a_worker_keeps_one_event_loop_so_its_runs_reuse_their_redis_connections(
    cluster: Cluster, worker: Worker
) -> None:
    """Each run publishes its events and listens for decisions through the channel
    layer, whose connections belong to an event loop: a worker that made a loop per run
    opened new ones every run (three), and so did a run's listener, cancelled while it
    waited for a message. Past its first run, runs open none, but for a pool that
    grows by one when a run happens to use one more connection at once than any before.
    (The cluster's proxy counts the connections its servers and worker opened.)"""
    api = cluster.api(0)
    session_id = api.new_session(cluster.setup["agents"]["brief"])

    def run_to_its_end(text: str) -> None:
        run = api.send(session_id, text)
        wait_until(lambda: api.run(run["id"])["status"] in ENDED, 60, f"run {text!r} ended")

    proxy = cluster.proxy
    assert proxy is not None
    run_to_its_end("first")
    before = proxy.accepted
    assert before > 0, "the servers and the worker reach Redis through the proxy"
    for text in ("second", "third", "fourth", "fifth"):
        run_to_its_end(text)
    opened = proxy.accepted - before

    assert opened <= 1  # a loop per run: 12; the listener cancelled: 4
