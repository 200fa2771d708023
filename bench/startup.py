"""What it costs to start a Studio process: paid at every server restart, worker start
and ``manage.py`` command, and ~220 times by a test pass (its Daphnes and commands).

- ``startup.server``: a Daphne serving Studio (``python -m daphne
  studio.asgi:application``, as the tests and ``make run-scaled`` start it) on the
  embedded default (SQLite, an in-memory channel layer), from its start to its first
  answered ``/healthz``: seconds of wall, with the server's CPU and RSS at that moment
  in the details.
- ``startup.server_cpu``: that CPU alone, the figure start-up work changes.
- ``startup.server_preloaded``: the same server as a user starts it, importing the model
  client before it serves (``STUDIO_PRELOAD``, on by default; the tests turn it off),
  so that its first run does not: wall seconds, its CPU and RSS in the details.
- ``startup.command``: ``manage.py check`` as a whole process (Django set up, the
  URLconf loaded and every system check run): seconds of wall and of CPU.

Medians of ``--runs`` starts each, on one migrated data directory. No targets: no issue
sets one. What start-up imports is kept in check by tests/studio/test_startup_imports.py.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Measurement, emit, log, parser, rounded
from bench.load.run import children_cpu_seconds, live_cpu_seconds, rss_kib
from tests.support.daphne_server import DaphneServer, migrate_data


def server_starts(server: DaphneServer, runs: int) -> list[tuple[float, float, float]]:
    """(wall s, CPU s, RSS MiB) of each start, up to its first answered /healthz."""
    starts = []
    for number in range(runs):
        began = time.perf_counter()
        server.start()
        wall = time.perf_counter() - began
        assert server.process is not None
        pid = server.process.pid
        rss = rss_kib(pid)
        if rss is None:
            raise RuntimeError(f"the server (pid {pid}) is gone")
        starts.append((wall, live_cpu_seconds(pid), rss / 1024))
        server.stop()
        log(f"server start {number + 1}/{runs}: {wall:.2f} s")
    return starts


def start_details(
    starts: list[tuple[float, float, float]], runs: int, *, preload: bool = False
) -> dict[str, Any]:
    """The medians of ``starts`` (wall, CPU, RSS), as a server row's details."""
    wall, cpu, rss = (statistics.median(column) for column in zip(*starts, strict=True))
    what = "python -m daphne studio.asgi:application, to its first /healthz"
    return {
        "runs": runs,
        "what": f"{what}, the model client preloaded" if preload else what,
        "wall_s": rounded(wall, 2),
        "cpu_s": rounded(cpu, 2),
        "rss_mib": rounded(rss),
    }


def command_runs(server: DaphneServer, runs: int) -> list[tuple[float, float]]:
    """(wall s, CPU s) of each ``manage.py check``."""
    timed = []
    for _ in range(runs):
        cpu = children_cpu_seconds()
        began = time.perf_counter()
        server.manage("check")
        wall = time.perf_counter() - began
        timed.append((wall, children_cpu_seconds() - cpu))
    return timed


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--runs", type=int, default=5, help="starts of each (default 5)")
    options = args.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        server = DaphneServer(Path(folder) / "data")
        migrate_data(server)
        server.manage("check")  # the first start after an install compiles nothing more
        starts = server_starts(server, options.runs)
        preloading = DaphneServer(server.data_dir, env={"STUDIO_PRELOAD": "1"})
        preloaded = server_starts(preloading, options.runs)
        commands = command_runs(server, options.runs)
    server_details = start_details(starts, options.runs)
    wall, cpu = server_details["wall_s"], server_details["cpu_s"]
    emit(Measurement("startup.server", wall, "s", details=server_details))
    emit(Measurement("startup.server_cpu", cpu, "s", details=server_details))
    preloaded_details = start_details(preloaded, options.runs, preload=True)
    wall = preloaded_details["wall_s"]
    emit(Measurement("startup.server_preloaded", wall, "s", details=preloaded_details))
    command_wall, command_cpu = (statistics.median(c) for c in zip(*commands, strict=True))
    command_details = {
        "runs": options.runs,
        "what": "manage.py check",
        "wall_s": rounded(command_wall, 2),
        "cpu_s": rounded(command_cpu, 2),
        "rss_mib": None,
    }
    emit(Measurement("startup.command", rounded(command_wall, 2), "s", details=command_details))


if __name__ == "__main__":
    main()
