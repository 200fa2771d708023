"""Scaled out for real: two Daphne servers and a ``run_worker`` process on one throwaway
PostgreSQL database and a Redis channel layer. Runs are started through one server,
executed by the worker, and watched from both servers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from cryptography.fernet import Fernet

from tests.scale.cluster import (
    Api,
    Viewer,
    Worker,
    executor_of,
    prepare,
    redis_url,
    scale_redis_url,
    throwaway_database,
    wait_until,
)
from tests.support.daphne_server import DaphneServer

# Starting PostgreSQL-backed servers and a worker takes tens of seconds on a busy machine.
pytestmark = pytest.mark.timeout(300)

LIMITS = {"max_steps": 1000, "max_model_calls": 1000, "max_tool_calls": 2000}


def scripted_agent(name: str, steps: int, token_delay_s: float) -> dict[str, Any]:
    """An agent whose model plays ``steps`` steps of text and one calculator call each:
    two stored events a step."""
    script: list[dict[str, Any]] = [
        {
            "text": f"step-{i}",
            "tool_calls": [{"name": "calculator", "args": {"expression": f"{i} * 2"}}],
        }
        for i in range(steps)
    ]
    script.append({"text": "all done"})
    return {
        "spec": {
            "name": name,
            "model": f"{name}_model",
            "instruction": "Play the script.",
            "tools": [{"name": "calculator"}],
            "max_iterations": 1000,
            "limits": LIMITS,
        },
        "options": {"script": script, "loop": False, "token_delay_s": token_delay_s},
    }


@dataclass
class Cluster:
    env: dict[str, str]
    servers: list[DaphneServer]
    setup: dict[str, Any]
    current: Worker | None = None

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    def api(self, server: int) -> Api:
        return Api(self.servers[server].url, self.setup["token"])

    def viewers(self, session_id: str, count: int) -> list[Viewer]:
        """``count`` viewers, alternately on each server."""
        servers = self.servers
        cookie = self.setup["cookie"]
        return [Viewer(servers[i % len(servers)], cookie, session_id) for i in range(count)]

    def new_worker(self) -> Worker:
        self.current = Worker({**self.servers[0].environment()}).start()
        return self.current

    def worker(self) -> Worker:
        """The running worker, started if there is none (a test killed it)."""
        current = self.current
        alive = current is not None and current.process is not None
        if alive and current.process.poll() is None:  # type: ignore[union-attr]
            return current  # type: ignore[return-value]
        return self.new_worker()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    redis.Redis.from_url(scale_redis_url()).flushdb()
    with throwaway_database() as database_url:
        env = {
            "DATABASE_URL": database_url,
            "REDIS_URL": scale_redis_url(),
            "STUDIO_RUN_EXECUTION": "worker",
            # Every process of a deployment shares these; a short lease so a killed
            # worker's run is recovered within seconds.
            "STUDIO_SECRET_KEY": "scale-tests-only-secret-key",
            "STUDIO_FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
            "STUDIO_RUN_LEASE_S": "2",
            "STUDIO_LIVE_RESYNC_S": "0.5",
            "STUDIO_MAX_CONCURRENT_RUNS_PER_USER": "50",
        }
        data = tmp_path_factory.mktemp("scale") / "data"
        first = DaphneServer(data, dict(env))
        setup = prepare(
            first,
            [scripted_agent("steady", 60, 0.0), scripted_agent("long", 900, 0.01)],
        )
        servers = [DaphneServer(data, dict(env)), DaphneServer(data, dict(env))]
        started = Cluster(env, servers, setup)
        try:
            with ThreadPoolExecutor(3) as pool:  # each process takes seconds to start
                for future in [pool.submit(server.start) for server in servers]:
                    future.result()
            yield started
        finally:
            if started.current is not None:
                started.current.stop()
            for server in servers:
                server.stop()


@pytest.fixture
def worker(cluster: Cluster) -> Worker:
    return cluster.worker()


def assert_every_seq_in_order(viewers: list[Viewer], stored: list[dict[str, Any]]) -> None:
    expected = [(event["seq"], event["id"]) for event in stored]
    assert [event["seq"] for event in stored] == list(range(1, len(stored) + 1))
    for viewer in viewers:
        assert viewer.breaches == []
        assert [(event["seq"], event["id"]) for event in viewer.events] == expected


async def watch_all(viewers: list[Viewer], done: Any, within: float) -> None:
    await asyncio.gather(*(viewer.watch_until(done, within) for viewer in viewers))


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
    # A status may overtake the run's last events; those still arrive, in order.
    await watch_all(viewers, lambda v: v.last_seq >= len(stored), 30)
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
