"""The server-cost benchmark (``bench.server_cost``) still runs and reports every
figure, in a tiny size: a Daphne and a worker on PostgreSQL and Redis, every read of
the load's mix answered, a socket caught up, a run watched. No timing is asserted."""

from __future__ import annotations

import pytest

from bench.server_cost import READS
from tests.support.bench import run_bench


@pytest.mark.timeout(240)  # a new database, a server and a worker, then a few requests
def test_server_cost_reports_what_each_read_socket_event_and_run_cost() -> None:
    args = ("--requests", "2", "--sockets", "2", "--runs", "1")

    results = {r["name"]: r for r in run_bench("server_cost", *args, timeout_s=220)}

    expected = {f"server_cost.{name}" for name in READS}
    expected |= {"server_cost.ws_connect", "server_cost.live_event", "server_cost.worker_run"}
    assert set(results) == expected
    assert all(r["value"] >= 0 for r in results.values())
    # Five tool steps a run: two stored events each, the answer and the agent's start
    # and end besides, all delivered to the one viewer.
    assert results["server_cost.live_event"]["details"]["events"] >= 10
    assert results["server_cost.worker_run"]["value"] > 0
