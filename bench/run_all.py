"""Run every benchmark and refresh the results table in bench/README.md.

Each script runs in its own process (so peak memory and Django's configuration are its
own) and prints JSON lines; they are collected into ``bench/latest.jsonl`` and the
table between the README's ``bench:results`` markers. A missed target is a result, not
a failure: the exit status is non-zero only if a script crashed.

    .venv/bin/python -m bench.run_all            # everything (make bench)
    .venv/bin/python -m bench.run_all --quick    # tiny sizes: proves the scripts run
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import provenance
from bench.common import log, parser
from bench.pgdb import drop_orphans

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
START, END = "<!-- bench:results:start -->", "<!-- bench:results:end -->"


@dataclass(frozen=True, slots=True)
class Script:
    module: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    timeout_s: float


SCRIPTS = (
    Script("runner_overhead", (), ("--turns", "5", "--warmup", "1", "--rounds", "1"), 150),
    Script("concurrency", (), ("--sessions", "3", "--turns", "2", "--rounds", "1"), 180),
    Script(
        "history_growth",
        ("--profile-turns", "3"),
        ("--turns", "12", "--window", "3", "--fill-budget-s", "0", "--profile-turns", "1"),
        300,
    ),
    Script(
        "history_growth",
        ("--model", "scripted", "--profile-turns", "3"),
        ("--model", "scripted", "--turns", "12", "--window", "3", "--fill-budget-s", "0"),
        300,
    ),
    Script("persistence", (), ("--events", "20", "--warmup", "2", "--seconds", "1"), 150),
    Script("parked_approvals", (), ("--runs", "3"), 120),
    Script("live_fanout", (), ("--viewers", "1", "--runs", "1"), 300),
    Script("pages", (), ("--sessions", "30", "--events", "60", "--loads", "1"), 300),
    Script("server_cost", (), ("--requests", "3", "--sockets", "2", "--runs", "1"), 300),
    Script("startup", (), ("--runs", "1"), 120),
    Script("worker_runs", (), ("--runs", "3", "--steps", "2", "--delay", "0.1"), 300),
    Script(
        "waterfall",
        (),
        ("--events", "100", "--live-steps", "10", "--loads", "1", "--requests", "2"),
        600,
    ),
    Script("long_session", (), ("--sizes", "12", "120", "--repeat", "1"), 600),
    Script("big_history", (), ("--events", "800", "--sessions", "8", "--big-events", "200"), 3600),
    Script("overview", (), ("--events", "800", "--sessions", "8", "--big-events", "200"), 3600),
)
MODULES = list(dict.fromkeys(script.module for script in SCRIPTS))
"""Each script's name once, in run order (``history_growth`` runs twice, once a model)."""


def run_script(script: Script, quick: bool) -> tuple[list[dict[str, Any]], str | None]:
    """The script's measurements, and why it failed if it did."""
    args = script.quick if quick else script.full
    command = [sys.executable, "-m", f"bench.{script.module}", *args]
    log(f"run_all: {' '.join(command[1:])}")
    # Its own process group: on a timeout the servers it started go too, not only it.
    process = subprocess.Popen(  # noqa: S603 (our own scripts)
        command, cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=script.timeout_s)
        failure = None if process.returncode == 0 else f"exit {process.returncode}"
    except subprocess.TimeoutExpired:  # keep what it measured before the cut
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        failure = f"timed out after {script.timeout_s:.0f}s"
    results = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    for result in results:
        print(json.dumps(result), flush=True)
    return results, failure


def machine() -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": len(os.sched_getaffinity(0)),
        "memory_gib": round(_meminfo_kib("MemTotal") / 2**20, 1),
        "cpu": _cpu_model(),
        "python": platform.python_version(),
        "commit": _commit(),
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def _meminfo_kib(key: str) -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _commit() -> str:
    def git(*args: str) -> str:
        done = subprocess.run(  # noqa: S603
            ["git", *args],  # noqa: S607 (git from PATH)
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return os.environ.get("BENCH_COMMIT", "unknown (not a git checkout)")
    dirty = " (with uncommitted changes)" if git("status", "--porcelain") else ""
    return head + dirty


def _number(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0")


def _ms(value: float) -> str:
    return f"{value:,.1f} ms"


def _per_s(value: float) -> str:
    return f"{value:,.0f}/s"


def _runner_notes(d: dict[str, Any]) -> str:
    reference, runner = d["reference"]["us_per_turn"], d["runner"]["p99_us"]
    text = f"{d['ratio']}x the reference ({reference:,.0f} us); p99 {runner:,.0f} us"
    if "runner_on_scripted_model_us" in d:
        text += (
            f"; on the SDK's ScriptedModel (no LangChain) {d['runner_on_scripted_model_us']:,.0f}"
            f" us, {d['runner_on_scripted_model_ratio']}x"
        )
    if "breakdown" in d:
        b = d["breakdown"]
        text += (
            f"; a turn: runner's fixed cost {b['runner_fixed_us']:,.0f} us, the agent's steps"
            f" {b['agent_steps_us']:,.0f}, LangChain and the adapter"
            f" {b['langchain_and_adapter_us']:,.0f}; garbage collection, across all three,"
            f" {b['runner_gc_us']:,.0f} (the reference's {b['reference_gc_us']:,.0f})"
        )
    elif "gc_us_per_turn" in d["runner"]:
        text += f"; garbage collection {d['runner']['gc_us_per_turn']:,.0f} us a turn"
    if "per_chunk" in d:
        c = d["per_chunk"]
        text += (
            f"; a streamed chunk {c['runner_us']:,.0f} us against the reference's"
            f" {c['reference_us']:,.0f} ({c['ratio']}x); a {c['long_answer_words']}-word"
            f" answer's turn {c['long_answer_ratio']}x"
        )
    if "plain_process" in d:
        p = d["plain_process"]
        text += (
            f"; start-up heap frozen, as in Studio's worker; without that {p['ratio']}x"
            f" ({p['us_per_turn']:,.0f} us against {p['reference_us_per_turn']:,.0f}, garbage"
            f" collection {p['gc_us_per_turn']:,.0f} us a turn)"
        )
    return text


def _history_notes(d: dict[str, Any]) -> str:
    if "reference_last_ms_median" in d:
        return (
            f"medians of turns {d['turns'] - d['tail_turns_timed'] + 1:,}-{d['turns']:,}"
            f" (interleaved): runner {_ms(d['last_ms_median'])}, reference"
            f" {_ms(d['reference_last_ms_median'])}; model: {d['model']}"
        )
    text = (
        f"medians: first {d['window']} turns {_ms(d['first_ms_median'])}, last"
        f" {d['tail_turns_timed']} {_ms(d['last_ms_median'])} (interleaved); sequential ratio"
        f" {d['sequential_ratio']}x, ratio of means {d['mean_ratio']}x; {d['turns_run']} turns"
        f" run, {d['turns_appended']} appended, {d['events_in_session']:,} events"
    )
    if "reference_growth" in d:
        text += f"; the reference grew {d['reference_growth']}x over the same turns"
    grown = d.get("growth_profile", {}).get("sdk_cumulative", [])
    leaves = [g for g in grown if "runner.py" not in g["function"]][:2]
    if leaves:
        text += "; grew most: " + ", ".join(
            f"`{g['function']}` {g['first_ms']:.1f} -> {g['last_ms']:.1f} ms" for g in leaves
        )
    return text


def _persistence_notes(d: dict[str, Any]) -> str:
    text = ""
    if "floor_per_s" in d:
        text = (
            f"{d['runs']} runs appending at once, {d['mean_batch']} events a commit;"
            f" {d['service_over_floor']}x the bare driver ({_per_s(d['floor_per_s'])}),"
            f" one commit an event (before) {_per_s(d['one_commit_an_event_per_s'])},"
            f" one run alone {_per_s(d['one_run_per_s'])}; load {d['load_average'][0]}; "
        )
    if "cpu_us_per_event" in d:
        text += (
            f"CPU {d['cpu_us_per_event']:,} us an event (every thread),"
            f" the bare driver's {d['floor_cpu_us_per_event']:,} us; "
        )
    text += (
        f"{d['database']}, CONN_MAX_AGE={d['conn_max_age']}; direct `append_event_sync` "
        f"{_per_s(d['append_event_sync_direct_per_s'])}"
    )
    if "service_event_commit_async_per_s" in d:
        text += f"; STUDIO_EVENT_COMMIT=async {_per_s(d['service_event_commit_async_per_s'])}"
    if "insert_commit_ms" in d:
        text += (
            f"; one-row commit {d['insert_commit_ms']} ms"
            f" ({d['insert_commit_no_flush_ms']} ms without the WAL flush)"
        )
    if "service_debug_off_per_s" in d:
        text += f"; with DEBUG off {_per_s(d['service_debug_off_per_s'])}"
    return text


def _concurrency_notes(d: dict[str, Any]) -> str:
    text = f"{d['sessions']} sessions x {d['turns_per_session']} turns in {d['elapsed_s']} s"
    if "reference_turns_per_s" in d:
        text += f"; {d['ratio']}x the reference ({d['reference_turns_per_s']:,.0f} turns/s)"
    if "reference_kib" in d:
        text += f"; {d['ratio']}x the reference ({d['reference_kib']:,.1f} KiB a session)"
    if "agent_history_kib" in d:
        text += (
            f"; of the runner's, the histories its agent keeps for the next calls"
            f" {d['agent_history_kib']:,.1f} KiB, the stored events and sessions"
            f" {d['stored_kib']:,.1f}"
        )
    if "rss_before_run_mib" in d:
        text += (
            f"; RSS before the run {d['rss_before_run_mib']} MiB"
            f"; Python allocations peak {d['python_alloc_peak_mib']} MiB (tracemalloc)"
        )
    return text


def _live_notes(d: dict[str, Any]) -> str:
    text = (
        f"p50 {_ms(d['p50_ms'])}, max {_ms(d['max_ms'])}; {d['samples']:,} deliveries"
        f" ({d['runs']} runs x 6 events x {d['viewers']} viewers); {d['topology']}"
    )
    by_server = d.get("p99_ms_by_server", {})
    if by_server:
        text += "; p99 " + ", ".join(f"{_ms(ms)} ({where})" for where, ms in by_server.items())
    if "server_cpu_ms_per_run" in d:
        text += f"; servers' CPU {_ms(d['server_cpu_ms_per_run'])} a run"
    return text


def _pages_notes(d: dict[str, Any]) -> str:
    size = f"{d['events']:,} events" if "events" in d else f"{d['sessions']:,} sessions"
    return (
        f"{size}; median of {d['loads']} loads (first load {_ms(d['first_load_ms'])});"
        f" HTML done {_ms(d['html_response_end_ms'])}, first contentful paint"
        f" {_ms(d['first_contentful_paint_ms'])}, content shown {_ms(d['content_shown_ms'])};"
        f" with STUDIO_DEBUG=0 {_ms(d['debug_off']['render_ms'])}"
        + (f"; reached by a link {_ms(d['linked_render_ms'])}" if "linked_render_ms" in d else "")
    )


def _waterfall_notes(d: dict[str, Any]) -> str:
    if "spans" in d:  # the spans API
        return (
            f"{d['spans']:,} spans ({d['bytes'] / 2**20:.1f} MiB); median of {d['requests']}"
            f" requests, max {_ms(d['max_ms'])}; the first (spans derived from the events)"
            f" {_ms(d['first_ms'])}"
        )
    if "loads" in d:  # interactive
        return (
            f"{d['events']:,} events; median of {d['loads']} loads, max {_ms(d['max_ms'])};"
            f" HTML done {_ms(d['html_response_end_ms'])}, spans received"
            f" {_ms(d['spans_response_end_ms'])}; a key press to the next span"
            f" {_ms(d['key_response_ms'])}; {d['rows_in_dom']} rows in the DOM"
        )
    return (
        f"p50 {_ms(d['p50_ms'])}, max {_ms(d['max_ms'])}, {d['frames_over_50_ms']} of"
        f" {d['frames']:,} frames over 50 ms; {d['events']:,} events in {d['seconds']} s"
        f" ({d['events_per_s']}/s); {d['long_animation_frames']} long animation frames,"
        f" longest {_ms(d['longest_animation_frame_ms'])}"
    )


def _big_history_notes(d: dict[str, Any]) -> str:
    if "events" in d:
        return f"{d['events']:,} events in {d['sessions']:,} sessions, {d['s']} s"
    return f"median of {d['repeat']} reads (slowest {_ms(d['max_ms'])})"


def _overview_notes(d: dict[str, Any]) -> str:
    mine = d["user"]
    return (
        f"{d['days']} days; {d['events']:,} events, {d['sessions']:,} sessions, {d['users']} users;"
        f" the user's {mine['runs']:,} runs, {mine['events']:,} events; slowest {_ms(d['max_ms'])}"
    )


def _parked_notes(d: dict[str, Any]) -> str:
    return (
        f"{d['runs_parked']} runs waiting on approvals ({d['mode']}): {d['asyncio_tasks_held']}"
        f" asyncio tasks, {d['threads_over_idle']} extra threads, peak RSS {d['peak_rss_mib']} MiB"
    )


def _long_session_notes(d: dict[str, Any]) -> str:
    return (
        f"{d['events']:,} events: warm {_ms(d['warm_ms'])}, cold {_ms(d['cold_ms'])};"
        f" reference {_ms(d['reference_ms'])} (median of {d['repeat']})"
    )


def _server_cost_notes(d: dict[str, Any]) -> str:
    return f"{d['per']}; {d['sample']}"


def _startup_notes(d: dict[str, Any]) -> str:
    rss = f", RSS {d['rss_mib']} MiB" if d["rss_mib"] is not None else ""
    return f"{d['what']}: wall {d['wall_s']} s, CPU {d['cpu_s']} s{rss}; median of {d['runs']}"


def _worker_runs_notes(d: dict[str, Any]) -> str:
    notes = (
        f"{d['runs']} runs of {d['steps']} tool steps sent at once to one worker, a model call"
        f" {d['model_call_s']} s; one run alone {d['run_alone_s']} s"
    )
    if "one_at_a_time_s" in d:
        notes += f"; one at a time they would take {d['one_at_a_time_s']} s"
    if "peak_mib" in d:
        notes += f"; the worker's RSS {d['idle_mib']} MiB idle, {d['peak_mib']} MiB at its peak"
    return notes


NOTES: dict[str, Callable[[dict[str, Any]], str]] = {
    "parked_approvals": _parked_notes,
    "runner_overhead": _runner_notes,
    "history_growth": _history_notes,
    "persistence": _persistence_notes,
    "concurrency": _concurrency_notes,
    "live_fanout": _live_notes,
    "pages": _pages_notes,
    "server_cost": _server_cost_notes,
    "startup": _startup_notes,
    "worker_runs": _worker_runs_notes,
    "long_session": _long_session_notes,
    "waterfall": _waterfall_notes,
    "big_history": _big_history_notes,
    "overview": _overview_notes,
}


def row(result: dict[str, Any]) -> str:
    met = {True: "yes", False: "**no**", None: "-"}[result["met"]]
    value = _number(result["value"])
    notes = NOTES[result["name"].split(".")[0]](result["details"])
    target = result["target"] or "-"
    return f"| `{result['name']}` | {value} {result['unit']} | {target} | {met} | {notes} |"


def kept_from(
    previous: Path, results: list[dict[str, Any]], ran: set[str]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """``results``, with the rows of the scripts that did not run (``--only``) kept from
    the ``previous`` run, in script order; and that run's machine line."""
    if not previous.exists():
        return results, None
    lines = [json.loads(line) for line in previous.read_text().splitlines() if line.strip()]
    before = next((line["machine"] for line in lines if "machine" in line), None)
    kept = [line for line in lines if "name" in line and line["name"].split(".")[0] not in ran]
    order = {script.module: index for index, script in enumerate(SCRIPTS)}
    rows = sorted([*kept, *results], key=lambda r: order.get(r["name"].split(".")[0], len(order)))
    return rows, before if kept else None


def table(results: list[dict[str, Any]], failures: dict[str, str], info: dict[str, Any]) -> str:
    only = info.get("only")
    earlier = provenance.describe(info, MODULES)
    lines = [
        f"Last run: {info['date']}, commit {info['commit']}, {info['elapsed_s']:.0f} s in all"
        + (f" (only {', '.join(only)})." if only else "."),
        f"Machine: {info['cpu']}, {info['nproc']} CPUs (`nproc`), {info['memory_gib']} GiB,"
        f" Python {info['python']}; load average {info['load_average']} at the start,"
        f" {info['load_average_end']} at the end.",
        *([earlier] if earlier else []),
        "",
        "| Benchmark | Value | Target | Met | Notes |",
        "|---|---|---|---|---|",
        *(row(r) for r in results),
        *(f"| `{name}` | failed | - | **no** | {why} |" for name, why in failures.items()),
    ]
    return "\n".join(lines)


def refresh_readme(path: Path, text: str) -> None:
    readme = path.read_text()
    pattern = re.compile(rf"{re.escape(START)}.*?{re.escape(END)}", re.DOTALL)
    if not pattern.search(readme):
        raise SystemExit(f"{path} has no {START} ... {END} block")
    path.write_text(pattern.sub(lambda _: f"{START}\n{text}\n{END}", readme))


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--quick", action="store_true", help="tiny sizes; no timing value")
    args.add_argument("--only", default="", help="comma-separated script names")
    args.add_argument("--readme", type=Path, default=BENCH / "README.md")
    args.add_argument("--jsonl", type=Path, default=BENCH / "latest.jsonl")
    ns = args.parse_args()
    chosen = [s for s in SCRIPTS if not ns.only or s.module in ns.only.split(",")]
    info = machine()
    started = time.perf_counter()
    results: list[dict[str, Any]] = []
    failures: dict[str, str] = {}
    for script in chosen:
        found, failure = run_script(script, ns.quick)
        results.extend(found)
        if failure:
            failures[script.module] = failure
    info["elapsed_s"] = time.perf_counter() - started
    if failures:  # a killed script could not drop its database
        for name in drop_orphans():
            log(f"run_all: dropped {name}, left by a killed script")
    info["load_average_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if ns.only:  # the other scripts' rows stay as they were measured
        info["only"] = list(dict.fromkeys(script.module for script in chosen))
        results, info["before"] = kept_from(ns.jsonl, results, set(info["only"]))
        info = provenance.trimmed(info, MODULES)
    ns.jsonl.write_text("".join(json.dumps(r) + "\n" for r in [{"machine": info}, *results]))
    refresh_readme(ns.readme, table(results, failures, info))
    log(f"run_all: {len(results)} measurements in {info['elapsed_s']:.0f} s")
    if failures:
        raise SystemExit(f"failed: {failures}")


if __name__ == "__main__":
    main()
