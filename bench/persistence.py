"""Persistence: events per second appended through ``DjangoSessionService``, one writer.

Backends, configured by ``studio.settings`` itself: SQLite is the embedded default (a
new file in ``STUDIO_DATA_DIR``: WAL, ``synchronous=NORMAL``, immediate transactions,
persistent connections); PostgreSQL comes from ``DATABASE_URL`` (a throwaway database
created for the run and dropped after it; ``CONN_MAX_AGE=60``). Targets: >= 2,000/s on
SQLite and >= 3,000/s on PostgreSQL. The value is with the default settings, so on
PostgreSQL with ``STUDIO_EVENT_COMMIT=durable``: every event's commit waits for the WAL
flush.

The events are copies of a real turn's six (``bench.workload``), appended one after
another from async code, as the runner stores them. ``details`` adds diagnostics on the
same database: ``append_event_sync`` called directly (the statement alone, without the
hop to the ORM thread; on PostgreSQL also with ``STUDIO_EVENT_COMMIT=async``, so without
the flush); on PostgreSQL the service with ``STUDIO_EVENT_COMMIT=async`` (event commits
do not wait for the WAL flush), what a flush costs on this disk (single-row inserts
committed with and without waiting for it) and a bare round trip (``SELECT 1``). The
durable and async variants alternate in rounds, so a busy machine slows both alike.

Django can be configured once per process, so each backend runs in a child process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Measurement, add_backend_args, each_backend, emit, log, parser, rounded
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

    def add(self, other: Rate) -> None:
        self.count += other.count
        self.elapsed += other.elapsed


def _events(template: list[Any], count: int) -> list[Any]:
    events: list[Any] = []
    number = 0
    while len(events) < count:
        events.extend(clone_turn(template, number))
        number += 1
    return events[:count]


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
    from django.conf import settings
    from django.db import connection
    from django.test import override_settings

    budget = (ns.events, ns.seconds)
    if backend == "postgresql":
        rate, details = measure_commit_modes(ns)
    else:
        rate = asyncio.run(service_rate(ns.events, ns.warmup, ns.seconds))
        details = {}
    log(f"persistence: {backend}: {rate.per_second:.0f} events/s through the service")
    details = {
        "events": rate.count,
        "writer": "one: sequential awaits of DjangoSessionService.append_event",
        "database": database_version(connection),
        "conn_max_age": connection.settings_dict["CONN_MAX_AGE"],
        "append_event_sync_direct_per_s": rounded(sync_rate(*budget).per_second),
        **details,
    }
    if backend == "postgresql":  # the statement and Python alone, without the flush
        with override_settings(STUDIO_EVENT_COMMIT="async"):
            direct_async = sync_rate(*budget)
        details["append_event_sync_direct_event_commit_async_per_s"] = rounded(
            direct_async.per_second
        )
    if settings.DEBUG:
        with override_settings(DEBUG=False):  # no query log, no SQL formatting
            quiet = asyncio.run(service_rate(ns.events, ns.warmup, ns.seconds))
        details["service_debug_off_per_s"] = rounded(quiet.per_second)
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


def measure_commit_modes(ns: argparse.Namespace, rounds: int = 3) -> tuple[Rate, dict[str, Any]]:
    """The service with durable (the default) and async event commits, alternating in
    ``rounds`` rounds of a third of the budget each: the durable rate over all rounds,
    and the diagnostics."""
    from django.test import override_settings

    share = (ns.events // rounds, ns.seconds / rounds)
    durable, fast = Rate(), Rate()
    for _ in range(rounds):
        for mode, total in (("durable", durable), ("async", fast)):
            with override_settings(STUDIO_EVENT_COMMIT=mode):
                total.add(asyncio.run(service_rate(share[0], ns.warmup, share[1])))
    flush_ms, no_flush_ms, round_trip_ms = commit_costs()
    log(f"persistence: postgresql: {fast.per_second:.0f} events/s with STUDIO_EVENT_COMMIT=async")
    details = {
        "rounds": rounds,
        "service_event_commit_async_per_s": rounded(fast.per_second),
        "insert_commit_ms": rounded(flush_ms, 3),
        "insert_commit_no_flush_ms": rounded(no_flush_ms, 3),
        "select_1_round_trip_ms": rounded(round_trip_ms, 3),
    }
    return durable, details


def commit_costs(count: int = 100) -> tuple[float, float, float]:
    """Milliseconds per single-row insert in its own transaction, waiting for the WAL
    flush and not (what a durable commit costs on this disk), and per ``SELECT 1`` (a
    round trip to the server with no work: the floor under any statement)."""
    from django.db import connection

    costs = []
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE bench_commit (n integer)")
        for mode in ("on", "off"):
            cursor.execute(f"SET synchronous_commit = {mode}")
            started = time.perf_counter()
            for n in range(count):
                cursor.execute("INSERT INTO bench_commit VALUES (%s)", [n])
            costs.append((time.perf_counter() - started) / count * 1000)
        cursor.execute("RESET synchronous_commit")
        cursor.execute("DROP TABLE bench_commit")
        started = time.perf_counter()
        for _ in range(count):
            cursor.execute("SELECT 1")
        costs.append((time.perf_counter() - started) / count * 1000)
    return costs[0], costs[1], costs[2]


def database_version(connection: Any) -> str:
    if connection.vendor == "sqlite":
        return f"SQLite {connection.Database.sqlite_version}"
    number = connection.pg_version
    return f"PostgreSQL {number // 10000}.{number % 10000}"


def main() -> None:
    args = parser(__doc__)
    add_backend_args(args, TARGETS)
    args.add_argument("--events", type=int, default=5000, help="at most, per variant")
    args.add_argument("--seconds", type=float, default=8.0, help="at most, per variant")
    args.add_argument("--warmup", type=int, default=200)
    ns = args.parse_args()
    if not each_backend("bench.persistence", TARGETS, ns.backend):
        run_backend(ns.backend, ns)


if __name__ == "__main__":
    main()
