"""The persistence benchmark still runs, in a tiny size (no timing is asserted)."""

from __future__ import annotations

import socket

import pytest

from tests.support.bench import run_bench
from tests.support.daphne_server import migrated_template


@pytest.fixture(scope="module", autouse=True)
def migrated_sqlite() -> None:
    """The scripts' SQLite databases start as copies of one migrated database, made
    once per process here (``bench.common.migrated_django``): each script would
    otherwise migrate its own, ~4 s of CPU apiece."""
    migrated_template()


def postgres_listening() -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", 5432)) == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_persistence_appends_through_the_session_service(backend: str) -> None:
    if backend == "postgresql" and not postgres_listening():
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    args = ("--backend", backend, "--events", "12", "--warmup", "2", "--seconds", "1")

    (result,) = run_bench("persistence", *args)

    assert result["name"] == f"persistence.{backend}"
    assert result["details"]["events"] == 12


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_big_history_generates_and_times_its_reads(backend: str) -> None:
    if backend == "postgresql" and not postgres_listening():
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    args = ("--backend", backend, "--events", "800", "--sessions", "8", "--big-events", "200")

    results = run_bench("big_history", *args, "--repeat", "1")

    names = [result["name"].rsplit(".", 1)[-1] for result in results]
    assert names == [
        "generate",
        "session_list",
        "session_search",
        "run_spans",
        "big_run_timeline",
        "big_run_waterfall",
        "big_run_events_api",
        "overview_14d",
        "costs_by_user_staff",
        "admin_sessions",
        "admin_runs",
        "admin_sessions_search",
        *(f"costs_by_{key}" for key in ("agent", "model", "day", "tool", "session", "run")),
    ]
    assert results[0]["details"]["sessions"] == 8


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_overview_bench_times_the_page_and_its_figures(backend: str) -> None:
    """Also runs the overview's PostgreSQL path (``percentile_cont``) on a real server."""
    if backend == "postgresql" and not postgres_listening():
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    args = ("--backend", backend, "--events", "800", "--sessions", "8", "--big-events", "200")

    results = run_bench("overview", *args, "--users", "1", "--repeat", "1")

    names = [result["name"].split(".", 2)[-1] for result in results]
    assert names == ["page_14d", "figures_14d", "page_92d", "figures_92d"]
    assert all(result["details"]["user"]["runs"] > 0 for result in results)


def test_parked_approvals_bench_counts_what_waiting_runs_hold() -> None:
    results = {r["name"]: r for r in run_bench("parked_approvals", "--runs", "3")}
    held = results["parked_approvals.executions_held"]
    assert held["value"] == 0  # parked: no run keeps an execution (see README)
    assert (held["details"]["runs_parked"], held["details"]["asyncio_tasks_held"]) == (3, 0)
    assert results["parked_approvals.seconds_to_resume_all"]["value"] > 0


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_long_session_times_cold_and_warm_turns(backend: str) -> None:
    if backend == "postgresql" and not postgres_listening():
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")

    results = run_bench("long_session", "--backend", backend, "--sizes", "12", "--repeat", "1")

    (result,) = results
    assert result["name"] == f"long_session.{backend}.events_12"
    assert result["details"]["events"] == 12 and result["details"]["cold_ms"] > 0


def test_startup_times_a_server_and_a_command_from_start_to_ready() -> None:
    results = {r["name"]: r for r in run_bench("startup", "--runs", "1", timeout_s=120)}
    assert set(results) == {
        "startup.server",
        "startup.server_cpu",
        "startup.server_preloaded",
        "startup.command",
    }
    for server in (results["startup.server"], results["startup.server_preloaded"]):
        # The CPU counted is the server's own, up to its first answer: some, and no
        # more than the wall time on two cores allows.
        assert 0 < server["details"]["cpu_s"] <= 2 * server["value"]
        assert server["details"]["rss_mib"] > 50  # Django, Channels, agents_core are loaded
    assert results["startup.server_preloaded"]["details"]["what"].endswith("preloaded")
    assert results["startup.command"]["details"]["cpu_s"] > 0
