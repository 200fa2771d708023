"""Studio with a big history: generate_history's default 1,000,000 events (issue 20, "A
big history"), then the pages and API a user opens on it, timed through Django's test
client (no network): the session list (filtered by status) and search, the spans API
of the 10,000-event run, and the admin's session and run changelists.

SQLite is a throwaway file in a temporary directory; PostgreSQL a throwaway
``studio_bench_<pid>`` database (``bench.pgdb``). ``--events`` makes it smaller.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import Measurement, add_backend_args, each_backend, emit, log, parser, percentile
from bench.pgdb import throwaway_database

TARGETS_MS = {"session_list": 300, "session_search": 300, "run_spans": 1000, "admin": 500}
BACKENDS = ("sqlite", "postgresql")


def setup_django(data_dir: Path, database_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "studio.settings"
    os.environ["STUDIO_DATA_DIR"] = str(data_dir)
    os.environ["STUDIO_ALLOWED_HOSTS"] = "testserver"
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def measure(backend: str, ns: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from studio.management.history import Plan, generate
    from studio.models import Run

    plan = Plan(events=ns.events, sessions=ns.sessions, big_events=ns.big_events)
    started = time.perf_counter()
    written = generate(plan, log=log)
    took = time.perf_counter() - started
    emit(
        Measurement(
            f"big_history.{backend}.generate",
            round(written.events / took),
            "events/s",
            details={"events": written.events, "sessions": written.sessions, "s": round(took, 1)},
        )
    )
    big = Run.objects.select_related("session__owner").filter(session__title__endswith="(#0)")
    run = big.get()
    user = Client()
    user.force_login(run.session.owner)
    staff = get_user_model().objects.create_superuser("bench_staff", password=None)
    admin = Client()
    admin.force_login(staff)
    reads: dict[str, tuple[Client, str, str]] = {
        "session_list": (user, "/sessions/?status=succeeded", "session_list"),
        "session_search": (user, "/sessions/?q=refund", "session_search"),
        "run_spans": (user, f"/api/runs/{run.pk}/spans/", "run_spans"),
        "admin_sessions": (admin, "/admin/studio/session/", "admin"),
        "admin_runs": (admin, "/admin/studio/run/", "admin"),
    }
    for name, (client, url, target) in reads.items():
        timed(backend, name, lambda c=client, u=url: c.get(u), TARGETS_MS[target], ns.repeat)


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
    ns = args.parse_args()
    if not each_backend("bench.big_history", BACKENDS, ns.backend):
        run_backend(ns.backend, ns)


if __name__ == "__main__":
    main()
