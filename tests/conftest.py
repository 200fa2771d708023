"""Shared pytest configuration. Suites: core (no Django), studio, e2e, scale."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _close_orm_thread_connection(request: pytest.FixtureRequest) -> Iterator[None]:
    """Async tests reach the database through asgiref's one sync thread, whose
    connection outlives each test (``CONN_MAX_AGE``). Close it before pytest-django
    drops the test database, which PostgreSQL refuses while a session is connected.
    Sessions without database tests (``tests/core``) never set one up."""
    uses_database = any("django_db_setup" in item.fixturenames for item in request.session.items)
    if not uses_database:
        yield
        return
    request.getfixturevalue("django_db_setup")  # so this closes before the database goes
    yield
    from asgiref.sync import sync_to_async
    from django.db import connections

    asyncio.run(sync_to_async(connections.close_all)())
