"""Live fan-out: commit-to-client latency of stored events for 1, 10 and 100 websocket
viewers of one session. Target: p99 < 50 ms at 100 viewers, on the embedded default
and on each server of the PostgreSQL + Redis deployment (the one running the agent and
the other, whose viewers' events all come through Redis).

Two topologies, each configured by ``studio.settings`` from the environment:

- ``inmemory``: one Daphne, the embedded default (SQLite, in-memory channel layer).
- ``redis``: two Daphnes sharing PostgreSQL (``DATABASE_URL``, a throwaway database)
  and the Redis channel layer (``REDIS_URL``). Runs execute on the first server; the
  viewers alternate between the servers, starting with the second, so a lone viewer
  watches from the server that does not run the agent.

The servers serve ``bench.live_asgi``: Studio's application plus a clock on the commit
of each stored event. Viewers are ``websockets`` clients in this process on
``/ws/sessions/<id>/?after=<last seq>&batch=1`` (frames in arrays, as the browser asks
for them) with a signed-in session cookie; each stamps every message as it arrives.
Runs are started through the REST API, one at a time, each
once every viewer has seen the previous one end: ``--runs`` per viewer count, fewer
(two at least) once ``--phase-budget-s`` has passed; ``details`` gives the number.
Each run is a tool call, the calculator and an answer (six stored events) on a
zero-latency scripted model.
Latency = receive time - commit time (``CLOCK_MONOTONIC``, system-wide), per stored
event per viewer. Clients and servers share the machine's CPUs. ``details`` also gives
the servers' CPU time per run (user + system, from ``/proc``): on a busy machine it
varies far less than the latencies do.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from bench.common import Measurement, emit, log, parser, percentile, rounded
from bench.pgdb import throwaway_database
from tests.support.daphne_server import ROOT, DaphneServer, migrate_data

TARGET_P99_MS = 50.0
TARGETS = {("inmemory", 100), ("redis", 100)}
ENDED = {"succeeded", "failed", "cancelled", "interrupted"}
SCRIPT = [
    {"tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
    {"text": "It is 42."},
]


class BenchDaphne(DaphneServer):
    """A ``DaphneServer`` serving ``bench.live_asgi`` instead of ``studio.asgi``."""

    def start(self) -> BenchDaphne:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", "0"]
        self.output = []
        self.process = subprocess.Popen(  # noqa: S603 (daphne, our application)
            [*command, "bench.live_asgi:application"],
            cwd=ROOT,
            env=self.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found = threading.Event()
        threading.Thread(target=self._read_output, args=(found,), daemon=True).start()
        if not found.wait(30):
            self.stop()
            raise RuntimeError("daphne did not start:\n" + "".join(self.output[-40:]))
        self._wait_healthy()
        return self


def prepare() -> None:
    """(In a child with the servers' environment.) A user, a scripted agent and a
    session; prints the session id, a signed-in session cookie and an API token."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client
    from rest_framework.authtoken.models import Token

    from studio import services
    from studio.models import ModelConfig

    owner = get_user_model().objects.create_user("bench")
    options = {"script": SCRIPT, "loop": True}
    ModelConfig.objects.create(owner=owner, name="zero", provider="scripted", options=options)
    spec = {"name": "bench", "model": "zero", "instruction": "Follow the script."}
    spec["tools"] = [{"name": "calculator"}]
    session = services.start_session(owner, services.create_agent(owner, name="bench", spec=spec))
    client = Client()
    client.force_login(owner)
    setup = {
        "session": str(session.pk),
        "cookie": f"sessionid={client.cookies['sessionid'].value}",
        "token": Token.objects.create(user=owner).key,
    }
    print(json.dumps(setup))


@dataclass(frozen=True, slots=True)
class Budget:
    """Runs per viewer count: at least ``least``, at most ``most``, and no new one once
    ``seconds`` have passed."""

    most: int
    least: int = 2
    seconds: float = 20.0


@dataclass(slots=True)
class Topology:
    name: str
    servers: list[BenchDaphne]
    describe: str

    def server_for(self, viewer: int) -> BenchDaphne:
        """Viewers alternate between the servers, the first on the last one."""
        return self.servers[(len(self.servers) - 1 + viewer) % len(self.servers)]


@dataclass(slots=True)
class Viewer:
    socket: ClientConnection
    server: int
    frames: list[tuple[int, str]] = field(default_factory=list)
    runs_ended: set[str] = field(default_factory=set)
    seen: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self) -> None:
        with contextlib.suppress(Exception):
            async for raw in self.socket:
                self.frames.append((time.monotonic_ns(), str(raw)))  # stamp first
                if '{"type": "status"' in str(raw):
                    for frame in json.loads(raw):
                        if frame["type"] == "status":
                            self._status(frame)
                self.seen.set()

    def _status(self, frame: dict[str, Any]) -> None:
        run = frame.get("run")
        if run is not None and run["status"] in ENDED:
            self.runs_ended.add(run["id"])

    async def wait(self, condition: Any) -> None:
        while not condition(self):
            self.seen.clear()
            await self.seen.wait()


def commits(path: Path) -> dict[int, int]:
    """seq -> commit time (ns) from the servers' commit log."""
    lines = path.read_text().splitlines()
    return {int(seq): int(ns) for seq, ns in (line.split() for line in lines if line)}


async def watch(topology: Topology, index: int, setup: dict[str, str], after: int) -> Viewer:
    server = topology.server_for(index)
    url = f"{server.ws_url}/ws/sessions/{setup['session']}/?after={after}&batch=1"  # as browsers
    headers = {"Cookie": setup["cookie"], "Origin": server.url}
    socket = await connect(url, additional_headers=headers, max_queue=None)
    viewer = Viewer(socket, topology.servers.index(server))
    asyncio.get_running_loop().create_task(viewer.read())
    await viewer.wait(lambda v: bool(v.frames))  # the status frame sent on connect
    return viewer


def start_run(server: DaphneServer, setup: dict[str, str]) -> None:
    request = urllib.request.Request(  # noqa: S310 (http on loopback)
        f"{server.url}/api/sessions/{setup['session']}/messages/",
        data=json.dumps({"text": "What is 6 * 7?"}).encode(),
        method="POST",
        headers={"Authorization": f"Token {setup['token']}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
        response.read()


async def run_once(server: DaphneServer, setup: dict[str, str], watching: list[Viewer]) -> None:
    """Start one run and wait until every viewer has seen it end."""
    targets = [len(v.runs_ended) + 1 for v in watching]
    await asyncio.to_thread(start_run, server, setup)
    async with asyncio.timeout(120):
        await asyncio.gather(
            *(
                v.wait(lambda v, n=n: len(v.runs_ended) >= n)
                for v, n in zip(watching, targets, strict=True)
            )
        )


def cpu_seconds(servers: list[BenchDaphne]) -> float:
    """The CPU time (user + system) the servers' processes have used so far."""
    total = 0
    for server in servers:
        assert server.process is not None
        stat = Path(f"/proc/{server.process.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


@dataclass(slots=True)
class Phase:
    """Latencies (ms) of every stored event of the runs at every viewer, by the index
    of the server the viewer watched from; how many runs; the servers' CPU seconds."""

    latencies: dict[int, list[float]]
    runs: int
    cpu_s: float


async def phase(
    topology: Topology, setup: dict[str, str], log_path: Path, viewers: int, runs: Budget
) -> Phase:
    after = max(commits(log_path), default=0)
    watching = await asyncio.gather(*(watch(topology, i, setup, after) for i in range(viewers)))
    started, done = time.monotonic(), 0
    cpu_before = cpu_seconds(topology.servers)
    try:
        while done < runs.most and (done < runs.least or time.monotonic() - started < runs.seconds):
            await run_once(topology.servers[0], setup, watching)
            done += 1
        cpu = cpu_seconds(topology.servers) - cpu_before
    finally:
        await asyncio.gather(*(v.socket.close() for v in watching))
    committed = commits(log_path)
    latencies: dict[int, list[float]] = {}
    for viewer in watching:
        found = latencies.setdefault(viewer.server, [])
        found.extend(
            (received - committed[seq]) / 1e6
            for received, seq in stored(viewer.frames)
            if seq > after
        )
    return Phase(latencies, done, cpu)


def stored(messages: list[tuple[int, str]]) -> Iterator[tuple[int, int]]:
    """(receive time, seq) of the stored events in ``messages`` (arrays of frames)."""
    for received, raw in messages:
        for frame in json.loads(raw):
            if frame["type"] == "event" and frame["event"]["seq"] is not None:
                yield received, frame["event"]["seq"]


def report(topology: Topology, viewers: int, measured: Phase) -> Measurement:
    by_server = measured.latencies
    latencies = [ms for found in by_server.values() for ms in found]
    p99 = percentile(latencies, 99)
    has_target = (topology.name, viewers) in TARGETS
    worst = max(percentile(found, 99) for found in by_server.values())  # of the servers'
    details: dict[str, Any] = {
        "p50_ms": rounded(percentile(latencies, 50), 2),
        "max_ms": rounded(max(latencies), 2),
        "samples": len(latencies),
        "runs": measured.runs,
        "server_cpu_ms_per_run": rounded(1000 * measured.cpu_s / max(measured.runs, 1)),
        "viewers": viewers,
        "topology": topology.describe,
    }
    if len(topology.servers) > 1:
        details["p99_ms_by_server"] = {
            ("runs the agent" if index == 0 else "other server"): rounded(percentile(found, 99), 2)
            for index, found in sorted(by_server.items())
        }
    return Measurement(
        name=f"live_fanout.{topology.name}.viewers_{viewers}.p99",
        value=rounded(p99, 2),
        unit="ms",
        target=f"< {TARGET_P99_MS:g} ms" if has_target else None,
        met=max(p99, worst) < TARGET_P99_MS if has_target else None,
        details=details,
    )


def prepared(
    data: Path, env: dict[str, str], count: int
) -> tuple[list[BenchDaphne], dict[str, str]]:
    """``count`` servers on one data directory (shared secrets) and database."""
    servers = [BenchDaphne(data, env=dict(env)) for _ in range(count)]
    migrate_data(servers[0])
    done = subprocess.run(
        [sys.executable, "-m", "bench.live_fanout", "--prepare"],
        cwd=ROOT,
        env=servers[0].environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    return servers, json.loads(done.stdout.strip().splitlines()[-1])


async def measure(
    topology: Topology, setup: dict[str, str], log_path: Path, counts: list[int], runs: Budget
) -> None:
    await phase(topology, setup, log_path, len(topology.servers), Budget(2, 2))  # warm-up
    # A hundred viewers in one process are this benchmark's doing (browsers are a
    # process each): its start-up heap is kept out of its full collections, as the
    # servers' is (studio.heap), so that they do not stamp the clients' pauses.
    gc.collect()
    gc.freeze()
    for viewers in counts:
        measurement = report(
            topology, viewers, await phase(topology, setup, log_path, viewers, runs)
        )
        log(f"live_fanout: {topology.name}, {viewers} viewers: p99 {measurement.value:.1f} ms")
        emit(measurement)


def run_topology(
    name: str, ns: Any, tmp: Path, env: dict[str, str], count: int, describe: str
) -> None:
    log_path = tmp / f"{name}-commits.log"
    log_path.touch()
    env = {**env, "BENCH_COMMIT_LOG": str(log_path)}
    servers, setup = prepared(tmp / f"{name}-data", env, count)
    try:
        for server in servers:
            server.start()
        counts = [int(n) for n in ns.viewers.split(",")]
        runs = Budget(ns.runs, min(2, ns.runs), ns.phase_budget_s)
        asyncio.run(measure(Topology(name, servers, describe), setup, log_path, counts, runs))
    finally:
        for server in servers:
            server.stop()


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--viewers", default="1,10,100", help="comma-separated viewer counts")
    args.add_argument("--runs", type=int, default=10, help="runs per viewer count, at most")
    args.add_argument(
        "--phase-budget-s", type=float, default=20.0, help="no new run after this (2 at least)"
    )
    args.add_argument("--topology", choices=["inmemory", "redis", "all"], default="all")
    args.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    args.add_argument("--prepare", action="store_true", help="(internal)")
    ns = args.parse_args()
    if ns.prepare:
        prepare()
        return
    with tempfile.TemporaryDirectory(prefix="studio-bench-live-") as tmp:
        if ns.topology in ("inmemory", "all"):
            describe = "one Daphne; SQLite, InMemoryChannelLayer (embedded default)"
            run_topology("inmemory", ns, Path(tmp), {}, 1, describe)
        if ns.topology in ("redis", "all"):
            with throwaway_database() as database:
                env = {"DATABASE_URL": database.url, "REDIS_URL": ns.redis_url}
                describe = "two Daphnes; PostgreSQL, Redis (live messages by publish/subscribe)"
                run_topology("redis", ns, Path(tmp), env, 2, describe)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    main()
