"""Persistence: events per second appended through ``DjangoSessionService``, one writer.

Backends, configured by ``studio.settings`` itself: SQLite is the embedded default (a
new file in ``STUDIO_DATA_DIR``: WAL, ``synchronous=NORMAL``, immediate transactions,
Django's default ``CONN_MAX_AGE=0``); PostgreSQL comes from ``DATABASE_URL`` (a
throwaway database created for the run and dropped after it; ``CONN_MAX_AGE=60``).
Targets: >= 2,000/s on SQLite and >= 3,000/s on PostgreSQL.

The events are copies of a real turn's six (``bench.workload``), appended one after
another from async code, as the runner stores them. ``details`` adds diagnostic rates
on the same database, each variant keeping the changes before it: ``append_event_sync``
called directly (the transaction alone: no thread hop, no connection checks), the
service with a persistent connection where the settings have none, without
``CONN_HEALTH_CHECKS`` where the settings have them (``database_sync_to_async`` resets
the check before each call, so each append pays a ``SELECT 1``), and on PostgreSQL
with ``synchronous_commit=off`` too (no wait for the WAL flush: what the commit's fsync
costs).

Django can be configured once per process, so each backend runs in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Measurement, emit, log, parser, rounded
from bench.pgdb import throwaway_database
from bench.workload import clone_turn, sample_turn

TARGETS = {"sqlite": 2000, "postgresql": 3000}
BENCH_USER = "bench"


def setup_django(data_dir: Path, database_url: str | None) -> None:
    """Configure Django from ``studio.settings`` as a deployment would: the embedded
    default (SQLite in ``STUDIO_DATA_DIR``) or ``DATABASE_URL``; then create the schema
    and the bench user."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "studio.settings"
    os.environ["STUDIO_DATA_DIR"] = str(data_dir)  # a new database, secrets in the temp dir
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    get_user_model().objects.create_user(BENCH_USER)


async def service_rate(events: int, warmup: int, seconds: float) -> Rate:
    """Appends through ``DjangoSessionService.append_event`` from async code, as the
    runner makes them."""
    from studio.session_service import DjangoSessionService

    service = DjangoSessionService()
    batch = _events(await sample_turn(), events + warmup)
    session = await service.create_session(app_name="bench", user_id=BENCH_USER)
    for event in batch[:warmup]:
        await service.append_event(session, event)
    rate = Rate()
    for event in batch[warmup:]:
        await service.append_event(session, event)
        if rate.tick(seconds):
            break
    return rate


def sync_rate(events: int, seconds: float) -> Rate:
    """Appends through ``append_event_sync`` called directly: the transaction alone,
    without the thread hop and the connection checks around it."""
    from studio.session_service import DjangoSessionService, append_event_sync

    batch = _events(asyncio.run(sample_turn()), events)
    service = DjangoSessionService()
    session = asyncio.run(service.create_session(app_name="bench", user_id=BENCH_USER))
    rate = Rate()
    for event in batch:
        append_event_sync(session.id, event)
        if rate.tick(seconds):
            break
    return rate


@dataclass(slots=True)
class Rate:
    """Events appended and the time they took; ``tick`` after each append says whether
    the time budget is spent."""

    count: int = 0
    started: float = field(default_factory=time.perf_counter)
    elapsed: float = 0.0

    def tick(self, budget_s: float) -> bool:
        self.count += 1
        self.elapsed = time.perf_counter() - self.started
        return self.elapsed >= budget_s

    @property
    def per_second(self) -> float:
        return self.count / self.elapsed


def _events(template: list[Any], count: int) -> list[Any]:
    events: list[Any] = []
    number = 0
    while len(events) < count:
        events.extend(clone_turn(template, number))
        number += 1
    return events[:count]


def reconnect_with(**changes: Any) -> None:
    """Change the default database's settings for every connection opened from now on."""
    from django.db import connections

    database = connections.settings["default"]
    for key, value in changes.items():
        if key == "OPTIONS":
            database["OPTIONS"] = {**database.get("OPTIONS", {}), **value}
        else:
            database[key] = value
    connections.close_all()


def run_backend(backend: str, ns: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="studio-bench-") as tmp:
        if backend == "sqlite":
            setup_django(Path(tmp), None)
            measure(backend, ns)
            return
        users = tuple(ns.pg_users.split(","))
        with throwaway_database(ns.pg_host, ns.pg_port, users) as database:
            setup_django(Path(tmp), database.url)
            try:
                measure(backend, ns)
            finally:
                from django.db import connections

                connections.close_all()


def measure(backend: str, ns: argparse.Namespace) -> None:
    from django.db import connection

    budget = (ns.events, ns.seconds)
    rate = asyncio.run(service_rate(ns.events, ns.warmup, ns.seconds))
    log(f"persistence: {backend}: {rate.per_second:.0f} events/s through the service")
    conn_max_age = connection.settings_dict["CONN_MAX_AGE"]
    details: dict[str, Any] = {
        "events": rate.count,
        "writer": "one: sequential awaits of DjangoSessionService.append_event",
        "database": database_version(connection),
        "conn_max_age": conn_max_age,
        "append_event_sync_direct_per_s": rounded(sync_rate(*budget).per_second),
    }
    if conn_max_age == 0:
        reconnect_with(CONN_MAX_AGE=None)
        kept = asyncio.run(service_rate(ns.events, ns.warmup, ns.seconds))
        details["service_persistent_connection_per_s"] = rounded(kept.per_second)
    if connection.settings_dict["CONN_HEALTH_CHECKS"]:
        reconnect_with(CONN_HEALTH_CHECKS=False)
        unchecked = asyncio.run(service_rate(ns.events, ns.warmup, ns.seconds))
        details["service_no_health_checks_per_s"] = rounded(unchecked.per_second)
    if backend == "postgresql":
        reconnect_with(OPTIONS={"options": "-c synchronous_commit=off"})
        async_commit = asyncio.run(service_rate(ns.events, ns.warmup, ns.seconds))
        details["service_also_synchronous_commit_off_per_s"] = rounded(async_commit.per_second)
    target = TARGETS[backend]
    emit(
        Measurement(
            f"persistence.{backend}",
            rounded(rate.per_second),
            "events/s",
            target=f">= {target:,}/s",
            met=rate.per_second >= target,
            details=details,
        )
    )


def database_version(connection: Any) -> str:
    if connection.vendor == "sqlite":
        return f"SQLite {connection.Database.sqlite_version}"
    number = connection.pg_version
    return f"PostgreSQL {number // 10000}.{number % 10000}"


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--backend", choices=[*TARGETS, "all"], default="all")
    args.add_argument("--events", type=int, default=5000, help="at most, per variant")
    args.add_argument("--seconds", type=float, default=8.0, help="at most, per variant")
    args.add_argument("--warmup", type=int, default=200)
    args.add_argument("--pg-host", default="127.0.0.1")
    args.add_argument("--pg-port", type=int, default=5432)
    args.add_argument("--pg-users", default="postgres,root", help="tried in order")
    ns = args.parse_args()
    if ns.backend == "all":
        for backend in TARGETS:
            child = [sys.executable, "-m", "bench.persistence", *sys.argv[1:], "--backend", backend]
            subprocess.run(child, check=True)  # noqa: S603 (this script, re-run)
        return
    run_backend(ns.backend, ns)


if __name__ == "__main__":
    main()
