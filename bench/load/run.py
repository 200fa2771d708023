"""Many users on the scaled deployment (issue 20, "Many users"): ``make load``.

Starts what ``make run-scaled`` runs — two Daphnes and ``--workers`` run workers on
PostgreSQL and Redis — on a throwaway database (``DATABASE_URL``'s server) and a Redis
database of its own (``LOAD_REDIS_DB``, default 13, flushed), then Locust headless with
``bench/load/locustfile.py``: ``--users`` browsers on the pages and the API and
``--live`` watchers, each sending a message and watching its run live over the
websocket of the other server. Runs execute in the workers (each one at a time), so at
most ``--workers`` of the live runs execute at once and the rest wait in the queue,
watched. Meanwhile it samples the resident memory of every server and worker process.
Afterwards it reads ``/metrics`` of both servers and prints the figures:

- errors: Locust's failures (every HTTP status >= 400, every live run that did not
  succeed within its timeout);
- p95 of each page and API read (Locust's, in ms);
- event delivery: receipt time at the viewer - commit time in the worker
  (``bench.load.commit_worker``), both ``time.time_ns()`` on this machine, per stored
  event received; p50/p95/p99 in ms;
- memory: each process's RSS at the end of the first quarter of the run and at its
  end (the first quarter is warm-up: imports, caches, connection pools);
- CPU: the cores each server and worker used over the run (its CPU seconds over the
  run's), and Locust's own: on one machine they share its cores.
"""

from __future__ import annotations

import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Measurement, emit, log, parser, percentile

HERE = Path(__file__).resolve().parent
METRICS_TOKEN = "load-scrape-token"  # noqa: S105 (a throwaway deployment's)
SHOWN_METRICS = (
    "studio_runs_started",
    "studio_runs_ended",
    "studio_events_persisted",
    "studio_events_stored",
    "studio_live_viewers",
    "studio_run_queue_depth",
    "studio_parked_runs",
    "studio_channel_layer_drops",
)


@dataclass(frozen=True, slots=True)
class Scale:
    users: int = 200
    live: int = 50
    workers: int = 4
    seconds: int = 600
    spawn_rate: float = 10.0
    steps: int = 5
    """Tool rounds of each live run (two stored events each, plus the message's four)."""
    token_delay_s: float = 0.02
    sample_s: float = 5.0


@dataclass(slots=True)
class Memory:
    """RSS samples (KiB) of each process, by name, in time order."""

    samples: dict[str, list[int]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def watch(self, pids: dict[str, int], every_s: float) -> None:
        while not self.stop.wait(every_s):
            for name, pid in pids.items():
                if (rss := rss_kib(pid)) is not None:
                    self.samples.setdefault(name, []).append(rss)

    def figures(self) -> dict[str, dict[str, float]]:
        found = {}
        for name, series in self.samples.items():
            warm = series[max(0, len(series) // 4 - 1)]
            found[name] = {
                "warm_mib": round(warm / 1024, 1),
                "end_mib": round(series[-1] / 1024, 1),
                "growth_pct": round(100 * (series[-1] - warm) / warm, 1),
                "samples": len(series),
            }
        return found


def cpu_seconds(pid: int) -> float | None:
    """A process's user and system CPU time so far (``/proc/<pid>/stat``); ``None``
    once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds() -> float:
    """User and system CPU time of this process's children that have ended and been
    waited for (``RUSAGE_CHILDREN``): the difference across a child's run is its own."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def live_cpu_seconds(pid: int) -> float:
    """``cpu_seconds`` of a process that must still run."""
    if (seconds := cpu_seconds(pid)) is None:
        raise RuntimeError(f"process {pid} is gone")
    return seconds


def cores_used(
    before: dict[str, float | None], pids: dict[str, int], seconds: float
) -> dict[str, float]:
    """Each process's CPU seconds since ``before``, over ``seconds``: the cores it used."""
    used = {}
    for name, pid in pids.items():
        start, end = before.get(name), cpu_seconds(pid)
        if start is not None and end is not None:
            used[name] = round((end - start) / seconds, 2)
    return used


def rss_kib(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next(line for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1])


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """``values`` in ``os.environ`` (which the servers and workers inherit) for the
    block, then as before: a test run's other servers must not inherit them."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load(scale: Scale, work: Path) -> dict[str, Any]:
    """Run the scenario at ``scale`` (files in ``work``); returns the figures."""
    with environment(
        SCALE_REDIS_DB=os.environ.get("LOAD_REDIS_DB", "13"),
        STUDIO_METRICS_TOKEN=METRICS_TOKEN,
        LOAD_COMMITS=str(work / "commits.txt"),
        # As `make run-scaled`: a bounded pool of connections per process (without one,
        # 40 + 10 users exhausted PostgreSQL's connections; README.md, "Many users").
        STUDIO_DB_POOL_MAX=os.environ.get("STUDIO_DB_POOL_MAX", "10"),
    ):
        return _load(scale, work)


def deployment_defaults() -> None:
    """The PostgreSQL server, Redis database and pool a deployment started by a bench
    script (``deployed``) uses, unless the environment names others."""
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
    os.environ.setdefault("SCALE_REDIS_DB", os.environ.get("LOAD_REDIS_DB", "13"))
    os.environ.setdefault("STUDIO_DB_POOL_MAX", "10")


@contextmanager
def deployed(data: Path, agents: list[dict[str, Any]], servers: int) -> Iterator[Any]:
    """``servers`` Daphnes on a throwaway database (``tests.scale.cluster``) as a
    deployment runs them: DEBUG off (the tests' servers have it on), which also serves
    the static files from STATIC_ROOT, collected first."""
    from tests.scale.cluster import start_cluster
    from tests.support import daphne_server

    daphne_server.START_TIMEOUT_S = 120.0  # a busy machine takes more than the tests' 30 s
    daphne_server.DaphneServer(data).manage("collectstatic", "--noinput")
    debug_off = {"STUDIO_DEBUG": "0"}
    with start_cluster(data, agents, servers=servers, lease_s=30, extra_env=debug_off) as started:
        yield started


def _load(scale: Scale, work: Path) -> dict[str, Any]:
    from tests.scale.cluster import Worker, scripted_agent

    agent = scripted_agent("load", scale.steps, scale.token_delay_s)
    began = time.monotonic()
    with deployed(work / "data", [agent], servers=2) as cluster:
        log(f"servers up after {time.monotonic() - began:.0f} s")
        for _ in range(scale.workers):
            worker = Worker(
                {**cluster.servers[0].environment()},
                command=("-m", "bench.load.commit_worker"),
            )
            cluster.workers.append(worker.start(within=120))
        setup = browsed_sessions(cluster, cluster.setup["agents"]["load"])
        log(f"workers up and sessions ready after {time.monotonic() - began:.0f} s")
        pids = {f"server {i}": s.process.pid for i, s in enumerate(cluster.servers)}  # type: ignore[union-attr]
        pids |= {f"worker {i}": w.pid for i, w in enumerate(cluster.workers)}
        memory = Memory()
        sampler = threading.Thread(target=memory.watch, args=(pids, scale.sample_s), daemon=True)
        sampler.start()
        cpu_before = {name: cpu_seconds(pid) for name, pid in pids.items()}
        locust_before = children_cpu_seconds()
        started = time.monotonic()
        try:
            locust = run_locust(scale, work, setup)
        finally:
            memory.stop.set()
            sampler.join()
        took = time.monotonic() - started
        cpu = cores_used(cpu_before, pids, took)
        cpu["locust"] = round((children_cpu_seconds() - locust_before) / took, 2)
        metrics = [scrape(server.url) for server in cluster.servers]
    return {
        "scale": asdict(scale),
        "locust_exit": locust,
        "requests": requests(work / "locust_stats.csv"),
        "failures": failures(work / "locust_failures.csv"),
        "delivery": delivery(work / "commits.txt", work / "receipts.txt"),
        "memory": memory.figures(),
        "cores": cpu,
        "metrics": metrics,
    }


def browsed_sessions(cluster: Any, agent: str) -> dict[str, Any]:
    """Three sessions with a finished run each, for the browsers to open."""
    api = cluster.api(0)
    sessions = [api.new_session(agent) for _ in range(3)]
    runs = [api.send(session, "hello")["id"] for session in sessions]
    for run in runs:
        api.wait_for_run(run, {"succeeded"}, within=120)
    return {
        "servers": [server.url for server in cluster.servers],
        "cookie": cluster.setup["cookie"],
        "token": cluster.setup["token"],
        "agent": agent,
        "sessions": sessions,
    }


def run_locust(scale: Scale, work: Path, setup: dict[str, Any]) -> int:
    (work / "setup.json").write_text(json.dumps(setup))
    env = {
        **os.environ,
        "LOAD_SETUP": str(work / "setup.json"),
        "LOAD_RECEIPTS": str(work / "receipts.txt"),
        "LOAD_LIVE": str(scale.live),
    }
    command = [
        *(sys.executable, "-m", "locust", "-f", str(HERE / "locustfile.py"), "--headless"),
        *("-u", str(scale.users + scale.live), "-r", str(scale.spawn_rate)),
        *("-t", f"{scale.seconds}s", "--stop-timeout", "5", "--only-summary"),
        *("--csv", str(work / "locust"), "--loglevel", "WARNING"),
    ]
    log(" ".join(command[1:]))
    done = subprocess.run(  # noqa: S603 (locust, our scenario)
        command,
        env=env,
        cwd=HERE.parents[1],
        capture_output=True,
        text=True,
        timeout=scale.seconds + 120,
        check=False,
    )
    (work / "locust.log").write_text(done.stdout + done.stderr)
    return done.returncode


def requests(path: Path) -> list[dict[str, Any]]:
    """Locust's figures per request name (ms), the aggregate last."""
    with path.open() as f:
        return [
            {
                "name": row["Name"],
                "count": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "p50_ms": float(row["50%"] or 0),
                "p95_ms": float(row["95%"] or 0),
                "p99_ms": float(row["99%"] or 0),
                "per_s": round(float(row["Requests/s"]), 1),
            }
            for row in csv.DictReader(f)
        ]


def failures(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as f:
        return [{k: row[k] for k in ("Name", "Error", "Occurrences")} for row in csv.DictReader(f)]


def delivery(commits: Path, receipts: Path) -> dict[str, Any]:
    """Receipt - commit per stored event a viewer received (ms); the message a run
    starts with is stored by the server that took it, not a worker, and not counted."""
    committed = dict(_pairs(commits))
    received = _pairs(receipts)
    latencies = [(at - committed[event]) / 1e6 for event, at in received if event in committed]
    found: dict[str, Any] = {
        "events_committed": len(committed),
        "received": len(latencies),
        "received_uncommitted_by_workers": len(received) - len(latencies),
    }
    if latencies:
        for p in (50, 95, 99):
            found[f"p{p}_ms"] = round(percentile(latencies, p), 1)
        found["max_ms"] = round(max(latencies), 1)
    return found


def _pairs(path: Path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    rows = (line.split() for line in path.read_text().splitlines())
    return [(row[0], int(row[1])) for row in rows if len(row) == 2]


def scrape(url: str) -> dict[str, float]:
    """The totals of ``SHOWN_METRICS`` on one server (labels summed, by status where
    there is one)."""
    request = urllib.request.Request(  # noqa: S310 (http on loopback)
        f"{url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            text = response.read().decode()
    except OSError as error:  # the figures still count when an overloaded server fails it
        return {f"unreadable: {error}": 0.0}
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        base = name.split("{")[0].removesuffix("_total")
        if base in SHOWN_METRICS and not base.endswith("_created"):
            label = name.split("{")[1].rstrip("}") if "{" in name else ""
            key = f"{base}{{{label}}}" if "status=" in label or "why=" in label else base
            totals[key] = totals.get(key, 0.0) + float(value)
    return totals


def report(figures: dict[str, Any]) -> None:
    """The figures as measurements (stdout) and a readable summary (stderr)."""
    rows = figures["requests"]
    reads = [r for r in rows if r["name"].startswith(("page ", "api "))]
    errors = sum(r["failures"] for r in rows if r["name"] != "Aggregated")
    page_p95 = max((r["p95_ms"] for r in reads if r["name"].startswith("page ")), default=0.0)
    d = figures["delivery"]
    growth = max((m["growth_pct"] for m in figures["memory"].values()), default=0.0)
    emit(
        Measurement(
            "load.errors", errors, "errors", "0", errors == 0, {"failures": figures["failures"]}
        )
    )
    emit(Measurement("load.page_p95", page_p95, "ms", "< 500 ms", page_p95 < 500, {"reads": reads}))
    p99 = d.get("p99_ms", float("inf"))
    emit(Measurement("load.delivery_p99", p99, "ms", "< 200 ms", p99 < 200, d))
    emit(Measurement("load.memory_growth", growth, "%", "flat", None, figures["memory"]))
    cores = figures["cores"]
    emit(Measurement("load.cores_used", round(sum(cores.values()), 2), "cores", None, None, cores))
    for row in rows:
        log(
            f"{row['name']:<40} n={row['count']:<6} fail={row['failures']:<4} "
            f"p50={row['p50_ms']:<6} p95={row['p95_ms']:<6} p99={row['p99_ms']:<6} {row['per_s']}/s"
        )
    log(f"delivery: {json.dumps(d)}")
    for name, m in figures["memory"].items():
        log(f"memory {name}: {json.dumps(m)}")
    log(f"cores used over the run: {json.dumps(figures['cores'])}")
    for i, metrics in enumerate(figures["metrics"]):
        log(f"/metrics server {i}: {json.dumps(metrics, sort_keys=True)}")


def main() -> None:
    args = parser(__doc__)
    defaults = Scale()
    for name in ("users", "live", "workers", "seconds"):
        args.add_argument(f"--{name}", type=int, default=getattr(defaults, name))
    args.add_argument("--spawn-rate", type=float, default=defaults.spawn_rate)
    args.add_argument("--keep", help="a directory to keep the files in (default: a temporary one)")
    ns = args.parse_args()
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
    scale = Scale(ns.users, ns.live, ns.workers, ns.seconds, ns.spawn_rate)
    if ns.keep:
        Path(ns.keep).mkdir(parents=True, exist_ok=True)
        report(load(scale, Path(ns.keep)))
        return
    with tempfile.TemporaryDirectory(prefix="studio-load-") as tmp:
        report(load(scale, Path(tmp)))


if __name__ == "__main__":
    main()
