"""What the scaled deployment's processes spend on each thing a user does: the cost
model behind ``make load``'s figures and docs/scaling.md.

One Daphne and one run worker (``run_worker``) on a throwaway PostgreSQL database and
Redis (``tests.scale.cluster``, as ``make load`` starts them), DEBUG off as deployed,
one signed-in account with the load's agent (five tool steps a run) and a session it
ran. One client at a time, on loopback, so nothing waits for a CPU and each figure is
the CPU seconds the process used (``/proc/<pid>/stat``) over how many it served:

- ``server_cost.<read>``: a page or API read of the load's mix, ms of server CPU each
  (``--requests`` of each, on one kept-alive connection);
- ``server_cost.ws_connect``: a live timeline's websocket opened, caught up (the
  session's stored events) and closed, ms of server CPU each;
- ``server_cost.live_event``: a run's stored event delivered to one viewer, ms of
  server CPU each (the server's share of the runs, with the POSTs that start them);
- ``server_cost.worker_run``: one run in the worker (its claim, every model call and
  tool, each event stored and published, its end), ms of worker CPU each.

No targets: ``make load`` holds the targets; this says where its CPU goes.
"""

from __future__ import annotations

import functools
import http.client
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import Measurement, emit, log, parser, rounded
from bench.load.frames import run_ended, stored_event, until_status
from bench.load.run import (
    browsed_sessions,
    deployed,
    deployment_defaults,
    live_cpu_seconds,
)

READS = {
    "healthz": ("page", "/healthz"),
    "session_list": ("page", "/sessions/"),
    "session_timeline": ("page", "/sessions/{session}/"),
    "session_waterfall": ("page", "/sessions/{session}/waterfall/"),
    "agent_list": ("page", "/agents/"),
    "overview": ("page", "/overview/"),
    "api_sessions": ("api", "/api/sessions/"),
    "api_events": ("api", "/api/sessions/{session}/events/?limit=100"),
    "api_costs": ("api", "/api/costs/?group_by=agent"),
}
WARMUP = 5


def cpu_ms_each(pid: int, count: int, action: Callable[[], object]) -> float:
    """ms of process ``pid``'s CPU per call of ``action``, over ``count`` calls."""
    before = live_cpu_seconds(pid)
    for _ in range(count):
        action()
    return (live_cpu_seconds(pid) - before) * 1000 / count


class Client:
    """The account's reads on one kept-alive HTTP connection to the server."""

    def __init__(self, url: str, setup: dict[str, Any]) -> None:
        host, port = url.split("//")[1].split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=30)
        self.headers = {
            "page": {"Cookie": f"sessionid={setup['cookie']}"},
            "api": {"Authorization": f"Token {setup['token']}"},
        }

    def get(self, kind: str, path: str) -> None:
        self.connection.request("GET", path, headers=self.headers[kind])
        response = self.connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: {response.status}")


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--requests", type=int, default=200, help="of each read")
    args.add_argument("--sockets", type=int, default=100)
    args.add_argument("--runs", type=int, default=30)
    ns = args.parse_args()
    deployment_defaults()
    with tempfile.TemporaryDirectory(prefix="studio-cost-") as tmp:
        measure(Path(tmp), ns.requests, ns.sockets, ns.runs)


def measure(work: Path, requests: int, sockets: int, runs: int) -> None:
    from tests.scale.cluster import Worker, scripted_agent

    agent = scripted_agent("load", steps=5, token_delay_s=0.0)
    with deployed(work / "data", [agent], servers=1) as c:
        worker = Worker({**c.servers[0].environment()}).start(within=120)
        c.workers.append(worker)
        setup = browsed_sessions(c, c.setup["agents"]["load"])
        server = c.servers[0]
        assert server.process is not None
        pid, session = server.process.pid, setup["sessions"][0]
        shape = {
            "per": "read, one Daphne's CPU (DEBUG off, PostgreSQL + Redis)",
            "sample": f"{requests} reads on one connection",
        }
        client = Client(server.url, setup)
        for name, (kind, path) in READS.items():
            url = path.format(session=session)
            for _ in range(WARMUP):
                client.get(kind, url)
            ms = cpu_ms_each(pid, requests, functools.partial(client.get, kind, url))
            emit(Measurement(f"server_cost.{name}", rounded(ms, 2), "ms", details=shape))
            log(f"server_cost: {name} {ms:.2f} ms of server CPU")
        viewer = Viewer(server.url, session, setup["cookie"])
        frames = viewer.catch_up()
        ms = cpu_ms_each(pid, sockets, viewer.catch_up)
        details = {
            "per": f"socket opened, caught up ({frames} frames) and closed, the server's CPU",
            "sample": f"{sockets} sockets",
        }
        emit(Measurement("server_cost.ws_connect", rounded(ms, 2), "ms", details=details))
        events, server_ms, worker_ms = live_runs(c.api(0), viewer, pid, worker.pid, runs)
        sample = {"sample": f"{runs} runs of 5 tool steps, {events} events", "events": events}
        per = "stored event delivered to a viewer, the server's CPU (with the POSTs)"
        emit(
            Measurement(
                "server_cost.live_event",
                rounded(server_ms, 2),
                "ms",
                details={"per": per, **sample},
            )
        )
        per = "run, the worker's CPU (claim, model calls, tools, events stored and sent, end)"
        emit(
            Measurement(
                "server_cost.worker_run",
                rounded(worker_ms, 1),
                "ms",
                details={"per": per, **sample},
            )
        )


class Viewer:
    """A live timeline's websocket on one session, as the page opens it."""

    def __init__(self, url: str, session: str, cookie: str) -> None:
        self.url = f"{url.replace('http', 'ws', 1)}/ws/sessions/{session}/?after=0"
        self.session, self.origin, self.cookie = session, url, cookie

    def open(self) -> Any:
        import websocket

        header = [f"Cookie: sessionid={self.cookie}"]
        return websocket.create_connection(self.url, header=header, origin=self.origin, timeout=30)

    def catch_up(self) -> int:
        """Open, read up to the first status frame (after the stored events), close;
        the frames read."""
        ws = self.open()
        try:
            return until_status(ws)
        finally:
            ws.close()


def live_runs(
    api: Any, viewer: Viewer, server: int, worker: int, runs: int
) -> tuple[int, float, float]:
    """``runs`` runs one after another, each sent through the API and watched to its end:
    the stored events the viewer got, and the server's ms a delivered event and the
    worker's ms a run."""
    ws = viewer.open()
    try:
        until_status(ws)
        server_before, worker_before = live_cpu_seconds(server), live_cpu_seconds(worker)
        started = time.monotonic()
        events = sum(watched_run(api, ws, viewer) for _ in range(runs))
        server_ms = (live_cpu_seconds(server) - server_before) * 1000 / events
        worker_ms = (live_cpu_seconds(worker) - worker_before) * 1000 / runs
    finally:
        ws.close()
    log(f"server_cost: {runs} runs, {events} events in {time.monotonic() - started:.1f} s")
    return events, server_ms, worker_ms


def watched_run(api: Any, ws: Any, viewer: Viewer) -> int:
    """Send a message, and read the socket until its run ends: its stored events."""
    run = api.send(viewer.session, "go")["id"]
    events = 0
    while True:
        frame = json.loads(ws.recv())
        if stored_event(frame) is not None:
            events += 1
        if run_ended(frame, run):
            return events


if __name__ == "__main__":
    main()
