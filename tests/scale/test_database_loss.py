"""PostgreSQL lost mid-run, for longer than storing an event retries: the worker's run
ends failed with a stored error event its viewers get, never silently, and the session
runs again once the database is back. One Daphne and one worker, with a lease longer
than the outage, so the error is the worker's own and not the lease sweep's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tests.scale.cluster import (
    ENDED,
    Cluster,
    Worker,
    assert_every_seq_in_order,
    database_url,
    executor_of,
    scripted_agent,
    start_cluster,
    wait_until,
    watch_all,
    with_path,
)

pytestmark = pytest.mark.timeout(300)

OUTAGE_S = 6.0
"""Longer than an append's retries (``studio.session_service.RETRY_DELAYS_S``, each try
waiting up to the pool's ``STUDIO_DB_POOL_TIMEOUT_S`` for a connection: 4 x 1 s + 1.3 s
here), shorter than the run's retries of its error event
(``studio.runs.execute.END_RETRY_S``) and the lease."""
POOL_TIMEOUT_S = "1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    agents = [scripted_agent("long", 300, 0.01)]
    data = tmp_path_factory.mktemp("outage")
    pool = {"STUDIO_DB_POOL_TIMEOUT_S": POOL_TIMEOUT_S}
    with start_cluster(data, agents, servers=1, lease_s=30, extra_env=pool) as started:
        yield started


@contextmanager
def database_away(db_url: str) -> Iterator[None]:
    """Refuse new connections to ``db_url``'s database and end the open ones; on exit,
    admit connections again."""
    name = db_url.rsplit("/", 1)[1]
    with psycopg.connect(with_path(database_url(), "/postgres"), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')


async def test_a_run_whose_database_goes_away_ends_failed_with_an_error_event(
    cluster: Cluster, worker: Worker
) -> None:
    api = cluster.api(0)
    session_id = api.new_session(cluster.setup["agents"]["long"])
    viewers = cluster.viewers(session_id, 3)
    await asyncio.gather(*(viewer.open() for viewer in viewers))
    run = api.send(session_id, "play")
    await watch_all(viewers, lambda v: v.last_seq >= 20, 60)
    assert f":{worker.pid}:" in executor_of(cluster.database_url, run["id"])

    with database_away(cluster.database_url):
        await asyncio.sleep(OUTAGE_S)
        outage_seq = max(viewer.last_seq for viewer in viewers)

    failed = await asyncio.to_thread(api.wait_for_run, run["id"], ENDED, 60)
    assert (failed["status"], failed["error_code"]) == ("failed", "internal_error")
    stored = api.events(session_id)
    assert stored[-1]["type"] == "error"
    assert stored[-1]["error"]["code"] == "internal_error"
    assert [e["type"] for e in stored].count("error") == 1
    assert len(stored) >= outage_seq
    await watch_all(viewers, lambda v: v.ended and v.last_seq >= len(stored), 30)
    assert_every_seq_in_order(viewers, stored)

    # The worker outlived the outage and executes the session's next run.
    assert worker.process is not None and worker.process.poll() is None
    again = api.send(session_id, "again")
    owner = await asyncio.to_thread(
        wait_until, lambda: executor_of(cluster.database_url, again["id"]), 60, "a claim"
    )
    assert f":{worker.pid}:" in owner
    finished = await asyncio.to_thread(api.wait_for_run, again["id"], ENDED, 120)
    assert finished["status"] == "succeeded"
    stored = api.events(session_id)
    await watch_all(viewers, lambda v: v.ended and v.last_seq >= len(stored), 30)
    assert_every_seq_in_order(viewers, stored)
    for viewer in viewers:
        await viewer.close()
