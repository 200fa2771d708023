"""The live-runs benchmark (``bench.worker_runs``) still runs, in a tiny size: one
worker executing runs at once on PostgreSQL and Redis, each watched to its end by a
viewer that got every stored event in order. No timing is asserted."""

from __future__ import annotations

import pytest

from tests.support.bench import run_bench


@pytest.mark.timeout(240)  # a new database, a server and a worker, then four runs
def test_worker_runs_reports_the_runs_one_worker_executed_at_once() -> None:
    args = ("--runs", "3", "--steps", "2", "--delay", "0.3")

    results = {r["name"]: r for r in run_bench("worker_runs", *args, timeout_s=220)}

    assert set(results) == {
        "worker_runs.live_at_once",
        "worker_runs.seconds_for_all",
        "worker_runs.rss_per_live_run",
        "worker_runs.cpu_per_run",
    }
    # Each run waits ~0.9 s on its model: one at a time, they would never overlap.
    assert results["worker_runs.live_at_once"]["value"] == 3
    assert results["worker_runs.cpu_per_run"]["value"] > 0
