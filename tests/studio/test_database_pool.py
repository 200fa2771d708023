"""PostgreSQL connections come from a bounded pool per process: a server under load
holds at most ``STUDIO_DB_POOL_MAX`` of them, however many threads run ORM work
(bench/README, "Many users": persistent connections per thread exhausted PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import close_old_connections, connection
from psycopg_pool import ConnectionPool

from studio.conf import env_database

PG_URL = "postgres://postgres@127.0.0.1:5432/studio"


def test_postgresql_is_pooled_with_no_persistent_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", PG_URL)
    monkeypatch.delenv("STUDIO_DB_POOL_MAX", raising=False)
    config = env_database("DATABASE_URL")
    assert config is not None
    assert "pool" not in config.get("OPTIONS", {})  # type: ignore[operator]  # off by default
    monkeypatch.setenv("STUDIO_DB_POOL_MAX", "20")
    config = env_database("DATABASE_URL")
    assert config is not None
    pool = config["OPTIONS"]["pool"]  # type: ignore[index]
    assert (pool["min_size"], pool["max_size"], pool["timeout"]) == (2, 20, 10.0)
    assert pool["check"] == ConnectionPool.check_connection  # a dead connection is replaced
    assert config["CONN_MAX_AGE"] == 0  # Django refuses a pool with persistent connections


def test_the_pool_is_sized_by_the_environment_and_can_be_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", PG_URL)
    monkeypatch.setenv("STUDIO_DB_POOL_MAX", "5")
    monkeypatch.setenv("STUDIO_DB_POOL_TIMEOUT_S", "2.5")
    config = env_database("DATABASE_URL")
    assert config is not None
    pool = config["OPTIONS"]["pool"]  # type: ignore[index]
    assert (pool["min_size"], pool["max_size"], pool["timeout"]) == (2, 5, 2.5)

    monkeypatch.setenv("STUDIO_DB_POOL_MAX", "0")
    config = env_database("DATABASE_URL")
    assert config is not None
    assert "pool" not in config.get("OPTIONS", {})  # type: ignore[operator]
    assert config["CONN_MAX_AGE"] == 60


def test_sqlite_is_never_pooled(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3")
    config = env_database("DATABASE_URL")
    assert config is not None
    assert "pool" not in config.get("OPTIONS", {})  # type: ignore[operator]


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """This process's connections pooled as ``STUDIO_DB_POOL_MAX=10`` configures them."""
    if connection.vendor != "postgresql":
        pytest.skip("the pool is PostgreSQL's (make test's second run)")
    monkeypatch.setenv("STUDIO_DB_POOL_MAX", "10")
    config = env_database_from(connection.settings_dict)
    settings = connection.settings_dict
    saved = settings["OPTIONS"], settings["CONN_MAX_AGE"]
    connection.close()
    settings["OPTIONS"], settings["CONN_MAX_AGE"] = config["OPTIONS"], config["CONN_MAX_AGE"]
    try:
        yield config["OPTIONS"]["pool"]
    finally:
        connection.close()
        connection.close_pool()  # type: ignore[attr-defined]  # PostgreSQL's
        settings["OPTIONS"], settings["CONN_MAX_AGE"] = saved


def env_database_from(settings: dict[str, Any]) -> dict[str, Any]:
    """The database ``env_database`` makes of this test database's address."""
    import os

    url = f"postgres://{settings['USER']}@{settings['HOST'] or '127.0.0.1'}:"
    url += f"{settings['PORT'] or 5432}/{settings['NAME']}"
    saved = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = url
    try:
        config = env_database("DATABASE_URL")
    finally:
        if saved is None:
            del os.environ["DATABASE_URL"]
        else:
            os.environ["DATABASE_URL"] = saved
    assert config is not None
    return config


@pytest.mark.django_db(transaction=True)
def test_many_threads_share_the_pools_few_connections(pooled: dict[str, Any]) -> None:
    """40 threads at once, each running queries as a request does and giving its
    connection back at the end (``close_old_connections``, as Django does at a
    request's end), are served by at most the pool's connections."""
    pool = pooled
    all_in = threading.Barrier(8)

    def request(i: int) -> int:
        try:
            if i < 8:  # eight hold a connection at the same moment
                connection.ensure_connection()
                all_in.wait(timeout=10)
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid(), pg_sleep(0.01)")
                pid: int = cursor.fetchone()[0]
            return pid
        finally:
            close_old_connections()

    with ThreadPoolExecutor(max_workers=40) as threads:
        pids = set(threads.map(request, range(200)))
    assert 8 <= len(pids) <= pool["max_size"]
