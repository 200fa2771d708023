"""The core benchmarks still run, in tiny sizes (no timing is asserted: see bench/)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import provenance
from bench.run_all import END, START, refresh_readme
from tests.support.bench import run_bench


def test_runner_overhead_compares_every_shape_with_the_reference() -> None:
    results = run_bench("runner_overhead", "--turns", "3", "--warmup", "1", "--rounds", "1")

    assert [r["name"] for r in results] == [
        "runner_overhead.fresh_session",
        "runner_overhead.one_session",
        "runner_overhead.streaming",
    ]
    assert all(r["details"]["reference"]["us_per_turn"] > 0 for r in results)
    breakdown = results[0]["details"]["breakdown"]
    assert breakdown["runner_fixed_us"] > 0
    assert {"agent_steps_us", "langchain_and_adapter_us", "runner_gc_us"} <= breakdown.keys()
    assert all(r["details"]["plain_process"]["reference_us_per_turn"] > 0 for r in results)
    # The long answer's turn ran on both sides. What one more chunk costs is a difference
    # of two means over 96 chunks: at three turns a round a single stall on a busy machine
    # can make it negative, so only that it is a figure is checked here.
    per_chunk = results[2]["details"]["per_chunk"]
    assert per_chunk["long_answer_ratio"] > 0
    assert all(math.isfinite(per_chunk[side]) for side in ("runner_us", "reference_us"))
    assert per_chunk["long_answer_words"] == 100


def test_concurrency_compares_turns_per_second_and_memory_with_the_reference() -> None:
    results = run_bench("concurrency", "--sessions", "3", "--turns", "2", "--rounds", "1")

    assert [r["unit"] for r in results] == ["turns/s", "KiB", "MiB"]
    assert results[0]["details"]["reference_turns_per_s"] > 0
    memory = results[1]["details"]
    assert memory["reference_kib"] > 0
    # Both parts of what the runner keeps are there: the agent's histories and the rest.
    assert memory["agent_history_kib"] > 0 and memory["stored_kib"] > 0
    assert memory["agent_history_kib"] + memory["stored_kib"] == pytest.approx(
        results[1]["value"], abs=0.2
    )


def test_history_growth_fills_the_session_and_compares_its_end_with_the_reference() -> None:
    args = ("--turns", "10", "--window", "2", "--fill-budget-s", "0", "--profile-turns", "1")

    growth, versus = run_bench("history_growth", *args)

    details = growth["details"]
    assert growth["name"] == "history_growth.adapter_last_over_first"
    assert details["turns_run"] + details["turns_appended"] == 10
    assert details["events_in_session"] == 60
    assert details["growth_profile"]["sdk_cumulative"]
    assert versus["name"] == "history_growth.vs_reference"
    assert versus["details"]["reference_last_ms_median"] > 0


def test_history_growth_on_the_scripted_model_keeps_its_own_target() -> None:
    args = ("--model", "scripted", "--turns", "10", "--window", "2", "--fill-budget-s", "0")

    (result,) = run_bench("history_growth", *args)

    assert result["name"] == "history_growth.last_over_first"
    assert result["target"] == "<= 1.2"


def test_run_all_replaces_only_the_results_block(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Benchmarks\n\n{START}\nold\n{END}\n\nHow to read them.\n")

    refresh_readme(readme, "new table")

    assert readme.read_text() == f"# Benchmarks\n\n{START}\nnew table\n{END}\n\nHow to read them.\n"


def _run(date: str, only: list[str] | None, before: dict | None = None, cpu: str = "A") -> dict:
    run = {"date": date, "commit": date.replace(" ", ""), "cpu": cpu, "only": only}
    if before is not None:
        run["before"] = before
    return run


SCRIPT_NAMES = ["runner_overhead", "concurrency", "pages", "waterfall", "worker_runs"]


def test_each_kept_row_is_credited_to_the_run_that_last_measured_it() -> None:
    full = _run("day 1", None, cpu="Intel")
    pages = _run("day 2", ["pages", "waterfall"], full)
    workers = _run("day 3", ["worker_runs"], pages)
    again = _run("day 4", ["pages"], workers)
    last = _run("day 5", ["runner_overhead"], again)

    credited = [(names, run["date"]) for names, run in provenance.earlier_runs(last, SCRIPT_NAMES)]

    assert credited == [
        (["pages"], "day 4"),
        (["worker_runs"], "day 3"),
        (["waterfall"], "day 2"),
        (["concurrency"], "day 1"),
    ]
    assert provenance.describe(last, SCRIPT_NAMES) == (
        "Rows kept from earlier runs: `pages` on day 4, commit day4; `worker_runs` on day 3,"
        " commit day3; `waterfall` on day 2, commit day2; `concurrency` on day 1, commit day1,"
        " on Intel."
    )


def test_the_chain_keeps_only_the_runs_that_still_have_rows() -> None:
    full = _run("day 1", None)
    pages = _run("day 2", ["pages"], full)
    superseded = _run("day 3", ["pages"], pages)
    last = _run("day 4", ["worker_runs"], superseded)

    kept = provenance.trimmed(last, SCRIPT_NAMES)

    chain = []
    run = kept.get("before")
    while run is not None:
        chain.append(run["date"])
        run = run.get("before")
    assert chain == ["day 3", "day 1"]  # day 2's pages rows were measured again on day 3
    assert provenance.describe(kept, SCRIPT_NAMES) == provenance.describe(last, SCRIPT_NAMES)


def test_a_full_run_credits_no_earlier_run() -> None:
    last = _run("day 2", None, _run("day 1", None))

    assert provenance.describe(last, SCRIPT_NAMES) == ""
    assert "before" not in provenance.trimmed(last, SCRIPT_NAMES)
