"""Live runs a worker holds at once (issue 20, "Many users": 50 live runs with viewers).

One Daphne and one ``run_worker --concurrency`` process on a throwaway PostgreSQL
database and Redis (``tests.scale.cluster``, DEBUG off as deployed). The agent's model
takes ``--delay`` seconds a call (a scripted model streaming one token a call; a real
provider's call takes about a second), ``--steps`` tool calls a run. First one run
alone, for its length; then ``--runs`` runs sent at once, each watched by a viewer on
the server's websocket to its end, while the runs executing are counted from the
database every 50 ms:

- ``worker_runs.live_at_once``: the most runs the one worker executed at once;
- ``worker_runs.seconds_for_all``: from the first message sent to the last run's end,
  against the run alone times the runs (the time one run at a time would take);
- ``worker_runs.rss_per_live_run``: the worker's RSS growth at its peak, per run
  executing (a process a run cost ~190 MiB each);
- ``worker_runs.cpu_per_run``: the worker's CPU a run, ms.

Every viewer must get its run's stored events in order, or the script fails.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psycopg

from bench.common import Measurement, emit, log, parser, rounded
from bench.load.run import deployed, deployment_defaults, live_cpu_seconds, rss_kib


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--runs", type=int, default=50)
    args.add_argument("--steps", type=int, default=10)
    args.add_argument("--delay", type=float, default=0.3, help="seconds a model call takes")
    ns = args.parse_args()
    deployment_defaults()
    with tempfile.TemporaryDirectory(prefix="studio-worker-runs-") as tmp:
        asyncio.run(measure(Path(tmp), ns.runs, ns.steps, ns.delay))


async def measure(work: Path, runs: int, steps: int, delay: float) -> None:
    from tests.scale.cluster import ROOT, Worker, assert_every_seq_in_order, scripted_agent

    agent = scripted_agent("live", steps=steps, token_delay_s=delay)
    with deployed(work / "data", [agent], servers=1) as c:
        command = (str(ROOT / "manage.py"), "run_worker", "--concurrency", str(runs))
        worker = Worker({**c.servers[0].environment()}, command=command).start(within=120)
        c.workers.append(worker)
        api, agent_id = c.api(0), c.setup["agents"]["live"]
        await one_run_alone(c, agent_id)  # the worker's first run warms it up
        alone = await one_run_alone(c, agent_id)
        log(f"worker_runs: one run alone {alone:.2f} s")

        sessions = [api.new_session(agent_id) for _ in range(runs)]
        viewers = [c.viewers(session_id, 1)[0] for session_id in sessions]
        await asyncio.gather(*(viewer.open() for viewer in viewers))
        counter = Counter(c.database_url, worker.pid)
        idle_kib = rss_kib(worker.pid) or 0
        cpu_before = live_cpu_seconds(worker.pid)
        counter.start()
        started = time.monotonic()
        for session_id in sessions:
            api.send(session_id, "play")
        await asyncio.gather(*(viewer.watch_until(lambda v: v.ended, 300) for viewer in viewers))
        took = time.monotonic() - started
        counter.stop()
        cpu_ms = (live_cpu_seconds(worker.pid) - cpu_before) * 1000 / runs
        for session_id, viewer in zip(sessions, viewers, strict=True):
            assert_every_seq_in_order([viewer], api.events(session_id))
            await viewer.close()

    shape = {"runs": runs, "steps": steps, "model_call_s": delay, "run_alone_s": round(alone, 2)}
    one_at_a_time = alone * runs
    log(f"worker_runs: {counter.most} at once; {runs} runs in {took:.1f} s")
    emit(Measurement("worker_runs.live_at_once", counter.most, "runs", details=shape))
    details = {**shape, "one_at_a_time_s": round(one_at_a_time, 1)}
    emit(Measurement("worker_runs.seconds_for_all", rounded(took, 2), "s", details=details))
    growth_mib = (counter.peak_kib - idle_kib) / 1024
    details = {**shape, "idle_mib": round(idle_kib / 1024, 1), "peak_mib": counter.peak_mib}
    per_run = growth_mib / max(counter.most, 1)
    emit(Measurement("worker_runs.rss_per_live_run", rounded(per_run, 2), "MiB", details=details))
    emit(Measurement("worker_runs.cpu_per_run", rounded(cpu_ms, 1), "ms", details=shape))


async def one_run_alone(cluster: Any, agent_id: str) -> float:
    """Seconds from sending a message to its run's end reaching a viewer."""
    api = cluster.api(0)
    session_id = api.new_session(agent_id)
    viewer = cluster.viewers(session_id, 1)[0]
    await viewer.open()
    started = time.monotonic()
    api.send(session_id, "play")
    await viewer.watch_until(lambda v: v.ended, 120)
    took = time.monotonic() - started
    await viewer.close()
    return took


class Counter:
    """Samples, every 50 ms, the runs the worker executes (``Run.owner_process`` names
    its pid) and its RSS, keeping the highest of each."""

    def __init__(self, database_url: str, pid: int) -> None:
        self.database_url, self.pid = database_url, pid
        self.most, self.peak_kib = 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def peak_mib(self) -> float:
        return round(self.peak_kib / 1024, 1)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        mine = f"%:{self.pid}:%"
        query = "SELECT count(*) FROM studio_run WHERE status = 'running' AND owner_process LIKE %s"
        with psycopg.connect(self.database_url) as conn:
            while not self._stop.wait(0.05):
                row = conn.execute(query, (mine,)).fetchone()
                self.most = max(self.most, int(row[0]) if row else 0)
                self.peak_kib = max(self.peak_kib, rss_kib(self.pid) or 0)


if __name__ == "__main__":
    main()
