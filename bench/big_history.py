"""Studio with a big history: generate_history's default 1,000,000 events (issue 20, "A
big history"), then the pages and API a user opens on it, timed through Django's test
client (no network): the session list (filtered by status) and search, the spans API
of the 10,000-event run, and the admin's session and run changelists.

Also the timeline and waterfall pages of that run and the first page of its events,
the cost roll-ups (``/api/costs/`` by each key, and by user for staff) and the overview
(usage by day).

SQLite is a throwaway file in a temporary directory; PostgreSQL a throwaway
``studio_bench_<pid>`` database (``bench.pgdb``). ``--events`` makes it smaller.
``--database-url`` reads a PostgreSQL database ``generate_history`` already filled
instead (generating 1,000,000 events takes ~2.5 minutes on this machine when idle).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import (
    Measurement,
    add_backend_args,
    each_backend,
    emit,
    log,
    migrated_django,
    parser,
    percentile,
)
from bench.pgdb import throwaway_database

TARGETS_MS = {
    "session_list": 300,
    "session_search": 300,
    "run_spans": 1000,
    "big_run": 1000,
    "rollup": 500,
    "admin": 500,
}
ROLLUPS = ("agent", "model", "day", "tool", "session", "run")
BACKENDS = ("sqlite", "postgresql")


def setup_django(data_dir: Path, database_url: str | None) -> None:
    """Django on ``studio.settings`` and a new database, answering its test client."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "studio.settings"
    os.environ["STUDIO_ALLOWED_HOSTS"] = "testserver"
    migrated_django(data_dir, database_url)


def measure(backend: str, ns: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from studio.management.history import Plan, generate
    from studio.models import Run

    if not ns.database_url:
        plan = Plan(events=ns.events, sessions=ns.sessions, big_events=ns.big_events)
        started = time.perf_counter()
        written = generate(plan, log=log)
        took = time.perf_counter() - started
        details = {"events": written.events, "sessions": written.sessions, "s": round(took, 1)}
        rate = round(written.events / took)
        emit(Measurement(f"big_history.{backend}.generate", rate, "events/s", details=details))
    big = Run.objects.select_related("session__owner").filter(session__title__endswith="(#0)")
    run = big.get()
    user = Client()
    user.force_login(run.session.owner)
    staff, _ = get_user_model().objects.get_or_create(
        username="bench_staff", defaults={"is_staff": True, "is_superuser": True}
    )
    admin = Client()
    admin.force_login(staff)
    for name, (client, url, target) in reads(user, admin, run).items():
        timed(backend, name, lambda c=client, u=url: c.get(u), TARGETS_MS[target], ns.repeat)


def reads(user: Any, admin: Any, run: Any) -> dict[str, tuple[Any, str, str]]:
    """name -> (client, url, target) of every read timed."""
    session = run.session.pk
    found: dict[str, tuple[Any, str, str]] = {
        "session_list": (user, "/sessions/?status=succeeded", "session_list"),
        "session_search": (user, "/sessions/?q=refund", "session_search"),
        "run_spans": (user, f"/api/runs/{run.pk}/spans/", "run_spans"),
        "big_run_timeline": (user, f"/sessions/{session}/", "big_run"),
        "big_run_waterfall": (user, f"/sessions/{session}/waterfall/", "big_run"),
        "big_run_events_api": (user, f"/api/sessions/{session}/events/?limit=500", "big_run"),
        "overview_14d": (user, "/overview/", "rollup"),
        "costs_by_user_staff": (admin, "/api/costs/?group_by=user", "rollup"),
        "admin_sessions": (admin, "/admin/studio/session/", "admin"),
        "admin_runs": (admin, "/admin/studio/run/", "admin"),
        "admin_sessions_search": (admin, "/admin/studio/session/?q=refund", "admin"),
    }
    for key in ROLLUPS:
        found[f"costs_by_{key}"] = (user, f"/api/costs/?group_by={key}", "rollup")
    return found


def timed(backend: str, name: str, read: Callable[[], Any], target_ms: float, repeat: int) -> None:
    times, status = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        status = read().status_code
        times.append((time.perf_counter() - started) * 1000)
    if status != 200:
        raise SystemExit(f"{name} answered {status}")
    p50 = round(percentile(times, 50), 1)
    emit(
        Measurement(
            f"big_history.{backend}.{name}",
            p50,
            "ms",
            target=f"< {target_ms} ms",
            met=p50 < target_ms,
            details={"p50_ms": p50, "max_ms": round(max(times), 1), "repeat": repeat},
        )
    )


Measure = Callable[[str, argparse.Namespace], None]


def run_backend(backend: str, ns: argparse.Namespace, measure: Measure = measure) -> None:
    """``measure`` on ``backend`` in a Django set up on a new data directory (and, for
    PostgreSQL, a throwaway database): this bench's, or another's on the same setup."""
    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        if backend == "sqlite":
            setup_django(Path(tmp), None)
            measure(backend, ns)
            return
        if getattr(ns, "database_url", None):
            setup_django(Path(tmp), ns.database_url)
            measure(backend, ns)
            return
        with throwaway_database(ns.pg_host, ns.pg_port, tuple(ns.pg_users.split(","))) as db:
            setup_django(Path(tmp), db.url)
            try:
                measure(backend, ns)
            finally:
                from django.db import connections

                connections.close_all()


def main() -> None:
    args = parser(__doc__)
    add_backend_args(args, BACKENDS)
    args.add_argument("--events", type=int, default=1_000_000)
    args.add_argument("--sessions", type=int, default=10_000)
    args.add_argument("--big-events", type=int, default=10_000)
    args.add_argument("--repeat", type=int, default=5)
    args.add_argument("--database-url", help="a PostgreSQL database generate_history filled")
    ns = args.parse_args()
    if ns.database_url:
        ns.backend = "postgresql"
    if not each_backend("bench.big_history", BACKENDS, ns.backend):
        run_backend(ns.backend, ns)


if __name__ == "__main__":
    main()
