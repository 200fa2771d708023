"""A throwaway PostgreSQL database for one benchmark run: created empty, dropped after."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

DEFAULT_USERS = ("postgres", "root")


@dataclass(frozen=True, slots=True)
class Database:
    name: str
    user: str
    host: str
    port: int

    @property
    def url(self) -> str:
        """As ``DATABASE_URL`` takes it (``studio.settings``)."""
        return f"postgres://{self.user}@{self.host}:{self.port}/{self.name}"


@contextmanager
def throwaway_database(
    host: str = "127.0.0.1", port: int = 5432, users: tuple[str, ...] = DEFAULT_USERS
) -> Iterator[Database]:
    """A new, empty database named ``studio_bench_<pid>``, dropped (connections and all)
    when the block ends. The first of ``users`` that can connect owns it."""
    import psycopg

    database = Database(f"studio_bench_{os.getpid()}", "", host, port)
    user = _create(psycopg, database, users)
    database = Database(database.name, user, host, port)
    try:
        yield database
    finally:
        with psycopg.connect(host=host, port=port, user=user, dbname="postgres") as admin:
            admin.autocommit = True
            admin.execute(f'DROP DATABASE IF EXISTS "{database.name}" WITH (FORCE)')


def _create(psycopg: Any, database: Database, users: tuple[str, ...]) -> str:
    failure: Exception | None = None
    for user in users:
        try:
            admin = psycopg.connect(
                host=database.host, port=database.port, user=user, dbname="postgres"
            )
        except psycopg.OperationalError as exc:
            failure = exc
            continue
        with admin:
            admin.autocommit = True
            admin.execute(f'CREATE DATABASE "{database.name}"')
        return user
    where = f"{database.host}:{database.port}"
    raise RuntimeError(f"cannot connect to PostgreSQL at {where} as any of {users}") from failure


def drop_orphans(
    host: str = "127.0.0.1", port: int = 5432, users: tuple[str, ...] = DEFAULT_USERS
) -> list[str]:
    """Drop the ``studio_bench_<pid>`` databases whose process is gone (a run killed
    before its clean-up); returns their names. Does nothing without PostgreSQL."""
    import psycopg

    for user in users:
        try:
            admin = psycopg.connect(host=host, port=port, user=user, dbname="postgres")
        except psycopg.OperationalError:
            continue
        with admin:
            admin.autocommit = True
            rows = admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE 'studio\\_bench\\_%'"
            ).fetchall()
            orphans = [name for (name,) in rows if not _alive(name.rsplit("_", 1)[-1])]
            for name in orphans:
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            return orphans
    return []


def _alive(pid: str) -> bool:
    return pid.isdigit() and os.path.exists(f"/proc/{pid}")
