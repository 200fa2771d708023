"""Shared pytest configuration. Suites: core (no Django), studio, e2e, scale.

``make test`` runs the suite on two pytest-xdist workers (``-n 2 --dist loadgroup``).
A worker runs whole files, so a module-scoped server or browser is started once; all of
tests/scale runs on one worker, one cluster of Daphnes and run workers at a time (they
share the scale Redis database and would starve each other of the two cores). Each
worker gets its own Redis channel-layer prefix, since tests flush the channel layer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from tests.support import daphne_server


def xdist_group(nodeid: str) -> str:
    """The group a test runs in under ``--dist loadgroup``: tests/scale is one group, any
    other file its own."""
    path = nodeid.split("::", 1)[0]
    return "tests/scale" if path.startswith("tests/scale/") else path


@pytest.hookimpl(tryfirst=True)  # before xdist's hook reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group(item.nodeid)))


def pytest_configure(config: pytest.Config) -> None:
    """The servers the tests start hash passwords fast (tests/support/settings.py).

    Under xdist, this worker's own channel-layer prefix on a shared Redis: a test that
    flushes the layer (tests.support.live) deletes the keys starting with its prefix, so
    only its worker's (``gw0-asgi`` is not a prefix of ``gw1-asgi``, nor ``asgi`` of
    either)."""
    daphne_server.SETTINGS_MODULE = "tests.support.settings"
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    from django.conf import settings

    layers = settings.CHANNEL_LAYERS
    if any("channels_redis" in str(layer["BACKEND"]) for layer in layers.values()):
        settings.CHANNEL_LAYERS = {
            alias: {**layer, "CONFIG": {**layer.get("CONFIG", {}), "prefix": f"{worker}-asgi"}}
            for alias, layer in layers.items()
        }


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
