"""The core benchmarks still run, in tiny sizes (no timing is asserted: see bench/)."""

from __future__ import annotations

from pathlib import Path

from bench.run_all import END, START, refresh_readme
from tests.support.bench import run_bench


def test_runner_overhead_compares_both_session_shapes_with_the_floor() -> None:
    results = run_bench("runner_overhead", "--turns", "3", "--warmup", "1", "--rounds", "1")

    assert [r["name"] for r in results] == [
        "runner_overhead.fresh_session",
        "runner_overhead.one_session",
    ]
    assert all(r["details"]["floor"]["us_per_turn"] > 0 for r in results)


def test_concurrency_reports_turns_per_second_and_peak_rss() -> None:
    results = run_bench("concurrency", "--sessions", "3", "--turns", "2")

    assert [r["unit"] for r in results] == ["turns/s", "MiB"]


def test_history_growth_fills_the_session_and_profiles_both_ends() -> None:
    args = ("--turns", "10", "--window", "2", "--fill-budget-s", "0", "--profile-turns", "1")

    (result,) = run_bench("history_growth", *args)

    details = result["details"]
    assert details["turns_run"] + details["turns_appended"] == 10
    assert details["events_in_session"] == 60
    assert details["growth_profile"]["sdk_cumulative"]


def test_run_all_replaces_only_the_results_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Benchmarks\n\n{START}\nold\n{END}\n\nHow to read them.\n")

    refresh_readme(readme, "new table")

    assert readme.read_text() == f"# Benchmarks\n\n{START}\nnew table\n{END}\n\nHow to read them.\n"
