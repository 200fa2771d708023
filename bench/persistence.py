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

from bench.common import (
    Measurement,
    add_backend_args,
    each_backend,
    emit,
    log,
    migrated_django,
    parser,
    rounded,
)
from bench.pgdb import throwaway_database
from bench.workload import clone_turn, sample_turn

TARGETS = {"sqlite": 5000, "postgresql": 5000}
MAX_BATCH = 500
"""``studio.group_commit.MAX_BATCH``, restored after the variant without group commit."""
BENCH_USER = "bench"


def setup_django(data_dir: Path, database_url: str | None) -> None:
    """Django on ``studio.settings`` and a new database, with the bench user."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "studio.settings"
    migrated_django(data_dir, database_url)
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(BENCH_USER)


async def service_rate(events: int, warmup: int, seconds: float, runs: int = 1) -> Rate:
    """Appends through ``DjangoSessionService.append_event`` from async code, as runs
    make them: ``runs`` sessions, each appended to by its own task that awaits every
    append before the next (persist then yield), all on one event loop, so all go
    through its one writer (``studio.group_commit``). ``events`` in all, at most."""
    from studio import group_commit
    from studio.session_service import DjangoSessionService

    service = DjangoSessionService()
    template = await sample_turn()
    sessions = [
        await service.create_session(app_name="bench", user_id=BENCH_USER) for _ in range(runs)
    ]
    for session in sessions:
        for event in _events(template, max(1, warmup // runs)):
            await service.append_event(session, event)
    share = events // runs + len(template) * 2
    planned = [_events(template, share, first_turn=share * (n + 1)) for n in range(runs)]
    writer = group_commit.running_writer()
    batched_before = (writer.batches, writer.events) if writer else (0, 0)
    rate = Rate()
    cpu = time.process_time()

    async def run(session: Any, number: int) -> None:
        for event in planned[number]:
            if rate.reserved >= events or rate.elapsed >= seconds:
                return
            rate.reserved += 1
            await service.append_event(session, event)
            rate.tick(seconds)

    await asyncio.gather(*(run(session, n) for n, session in enumerate(sessions)))
    rate.cpu = time.process_time() - cpu
    writer = group_commit.running_writer()
    if writer is not None:
        rate.batches = writer.batches - batched_before[0]
        rate.batched = writer.events - batched_before[1]
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
    reserved: int = 0
    batches: int = 0
    """Group commits of two events or more, and the events in them."""
    batched: int = 0
    cpu: float = 0.0
    """CPU seconds the process spent (every thread: the event loop's and the ORM's)."""

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
        self.batches += other.batches
        self.batched += other.batched
        self.cpu += other.cpu

    @property
    def cpu_us_per_event(self) -> float:
        return self.cpu / max(1, self.count) * 1e6

    @property
    def mean_batch(self) -> float:
        """Events a commit, counting appends that went alone as batches of one."""
        alone = self.count - self.batched
        return self.count / max(1, self.batches + alone)


def _events(template: list[Any], count: int, first_turn: int = 0) -> list[Any]:
    events: list[Any] = []
    number = first_turn
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
    rate, floor, details = measure_rounds(backend, ns)
    closeness = rate.per_second / floor.per_second
    log(
        f"persistence: {backend}: {rate.per_second:.0f} events/s through the service"
        f" ({ns.runs} runs), the bare driver {floor.per_second:.0f}/s in batches of"
        f" {rate.mean_batch:.1f}: {closeness:.2f}x; CPU {rate.cpu_us_per_event:.0f} us an event,"
        f" the floor's {floor.cpu_us_per_event:.0f} us"
    )
    one_run = asyncio.run(service_rate(*budget[:1], ns.warmup, budget[1] / 3))
    details = {
        "events": rate.count,
        "writer": f"one writer task; {ns.runs} sessions appending concurrently through"
        " DjangoSessionService.append_event, each awaiting every append",
        "runs": ns.runs,
        "mean_batch": rounded(rate.mean_batch),
        "floor_per_s": rounded(floor.per_second),
        "service_over_floor": rounded(closeness, 2),
        "cpu_us_per_event": rounded(rate.cpu_us_per_event),
        "floor_cpu_us_per_event": rounded(floor.cpu_us_per_event),
        "one_run_per_s": rounded(one_run.per_second),
        "database": database_version(connection),
        "conn_max_age": connection.settings_dict["CONN_MAX_AGE"],
        "append_event_sync_direct_per_s": rounded(sync_rate(*budget).per_second),
        "load_average": [rounded(x, 2) for x in os.getloadavg()],
        **details,
    }
    if backend == "postgresql":  # the statement and Python alone, without the flush
        with override_settings(STUDIO_EVENT_COMMIT="async"):
            direct_async = sync_rate(*budget)
        details["append_event_sync_direct_event_commit_async_per_s"] = rounded(
            direct_async.per_second
        )
        details.update(
            zip(COMMIT_COST_KEYS, (rounded(ms, 3) for ms in commit_costs()), strict=True)
        )
    if settings.DEBUG:
        with override_settings(DEBUG=False):  # no query log, no SQL formatting
            quiet = asyncio.run(service_rate(*budget[:1], ns.warmup, budget[1] / 3, ns.runs))
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


COMMIT_COST_KEYS = ("insert_commit_ms", "insert_commit_no_flush_ms", "select_1_round_trip_ms")


def measure_rounds(
    backend: str, ns: argparse.Namespace, rounds: int = 3
) -> tuple[Rate, Rate, dict[str, Any]]:
    """The service (durable commits, the default) and the bare driver writing the same
    rows in batches of the service's mean size, alternating in ``rounds`` rounds of a
    third of the budget each; on PostgreSQL also the service with
    ``STUDIO_EVENT_COMMIT=async``. Returns the service's and the floor's rates over all
    rounds, and the diagnostics."""
    from django.test import override_settings

    from studio import group_commit

    share = (ns.events // rounds, ns.seconds / rounds)
    durable, floor, fast, alone = Rate(), Rate(), Rate(), Rate()
    for _ in range(rounds):
        with override_settings(STUDIO_EVENT_COMMIT="durable"):
            done = asyncio.run(service_rate(share[0], ns.warmup, share[1], ns.runs))
            group_commit.MAX_BATCH = 1  # before group commit: one commit an event
            try:
                alone.add(asyncio.run(service_rate(share[0], ns.warmup, share[1], ns.runs)))
            finally:
                group_commit.MAX_BATCH = MAX_BATCH
        durable.add(done)
        floor.add(floor_rate(done.count, max(1, round(done.mean_batch)), ns.runs))
        if backend == "postgresql":
            with override_settings(STUDIO_EVENT_COMMIT="async"):
                fast.add(asyncio.run(service_rate(share[0], ns.warmup, share[1], ns.runs)))
    details: dict[str, Any] = {
        "rounds": rounds,
        "one_commit_an_event_per_s": rounded(alone.per_second),
    }
    if fast.count:
        details["service_event_commit_async_per_s"] = rounded(fast.per_second)
    return durable, floor, details


def floor_rate(events: int, batch: int, runs: int) -> Rate:
    """The floor: the rows the service stores for ``events`` events of ``runs``
    sessions, written by the bare driver (``sqlite3``, ``psycopg``) with the same SQL
    in transactions of ``batch`` events (each session's seqs allocated by one
    ``UPDATE``, the events inserted by one ``executemany``, on PostgreSQL one
    ``COPY``). Rows are built before the clock starts: what is left is the database
    and its driver."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from studio import event_rows
    from studio.models import Session

    owner = get_user_model().objects.get(username=BENCH_USER)
    sessions = [Session.objects.create(app_name="bench", owner=owner) for _ in range(runs)]
    template = asyncio.run(sample_turn())
    planned = _events(template, events)
    work = []
    for start in range(0, len(planned), batch):
        chunk = planned[start : start + batch]
        work.append(_floor_batch(sessions, start, chunk, event_rows, connection.vendor))
    connection.ensure_connection()
    raw = connection.connection
    begin = "BEGIN IMMEDIATE" if connection.vendor == "sqlite" else "BEGIN"
    rate = Rate()
    cpu = time.process_time()
    cursor = raw.cursor()
    for allocate, allocate_params, insert, rows in work:
        cursor.execute(begin)
        cursor.execute(allocate, allocate_params)
        cursor.fetchall()
        if connection.vendor == "postgresql":  # as event_rows._insert_rows does
            with cursor.copy(insert) as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cursor.executemany(insert, rows)
        cursor.execute("COMMIT")
    rate.count = len(planned)
    rate.elapsed = time.perf_counter() - rate.started
    rate.cpu = time.process_time() - cpu
    return rate


def _floor_batch(
    sessions: list[Any], start: int, chunk: list[Any], event_rows: Any, vendor: str
) -> tuple[str, list[Any], str, list[list[Any]]]:
    """One batch's SQL and parameters, as ``event_rows.insert_batch`` builds them: the
    ``n``-th event of the run goes to session ``n % len(sessions)``, as concurrent runs'
    events interleave."""
    from studio import sql_columns
    from studio.models import Session

    groups: dict[int, list[tuple[Any, int]]] = {}
    for offset, event in enumerate(chunk):
        number = start + offset
        index = number % len(sessions)
        groups.setdefault(index, []).append((event, number // len(sessions) + 1))
    params: list[Any] = []
    rows: list[list[Any]] = []
    for index, pairs in groups.items():
        session = sessions[index]
        newest = sql_columns.db(Session, "updated_at", pairs[-1][0].created_at)
        params += [session.key, len(pairs), newest]
        pk = sql_columns.db(Session, "id", session.pk)
        rows += [[pk, seq, *event_rows._event_params(session.key, e, seq)] for e, seq in pairs]
    allocate = event_rows._allocate_sql(len(groups), vendor, with_state=False)
    insert = event_rows._copy_sql() if vendor == "postgresql" else event_rows._insert_sql()
    if vendor == "sqlite":
        allocate, insert = allocate.replace("%s", "?"), insert.replace("%s", "?")
    return allocate, params, insert, rows


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
    args.add_argument("--runs", type=int, default=50, help="sessions appending concurrently")
    ns = args.parse_args()
    if not each_backend("bench.persistence", TARGETS, ns.backend):
        run_backend(ns.backend, ns)


if __name__ == "__main__":
    main()
