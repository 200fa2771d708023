"""Shared pytest configuration. Suites: core (no Django), studio, e2e, scale.

``make test`` runs the suite on three pytest-xdist workers (``-n 3 --dist loadgroup``):
with two, the suite kept this machine's two cores only 66% busy, its tests waiting on
browsers and servers.
A worker runs whole files, so a module-scoped server or browser is started once.
tests/scale runs in a pass of its own, on three workers (the Makefile): one cluster of
Daphnes and run workers on each, in Redis databases of its own (tests/scale/conftest.py).
Each worker gets its own Redis channel-layer prefix, since tests flush the channel layer.

The end-to-end files go out first: each starts servers and a browser, and takes from
seconds to minutes however few tests it has. In xdist's own order (the files with the
most tests first) they would come last, where one long file keeps a worker busy after
the others have run out of work.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from tests.support import daphne_server

# No per-example deadline (Hypothesis's default is 200 ms): a deadline is a timing
# assertion, and on these two saturated cores an example now and then takes longer.
# test_evals_run_checks failed once beside a clean-clone run, then passed on replaying
# its examples and found nothing in 30,000 more. Speed is for bench/.
hypothesis_settings.register_profile("studio", deadline=None)
hypothesis_settings.load_profile("studio")


def xdist_group(nodeid: str) -> str:
    """The group a test runs in under ``--dist loadgroup``: its file."""
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # a hook of pytest-xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups of ``xdist_group``, handed out in the order
    the workers collected them (``end_to_end_first``), not re-sorted by size.

    xdist finds a test's group in a suffix it adds to the test's id (``@group``), which
    pytest 9.2 no longer shows (``Node.nodeid`` is built from ``Node._id``): each test
    became a group of its own, spread over both workers, and a module's server and
    browser were started again on each worker and after every switch between files."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileGroups(LoadScopeScheduling):  # type: ignore[misc]  # untyped
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid)

    config.option.loadscopereorder = False
    return FileGroups(config, log)


LONGEST_FIRST = (
    "tests/scale/test_load.py",
    "tests/scale/test_worker_runs.py",
    "tests/scale/test_redis_stall.py",
    "tests/scale/test_database_loss.py",
    "tests/scale/test_worker_openai.py",
    "tests/scale/test_worker_runs_bench.py",
    "tests/scale/test_server_cost.py",
)
"""tests/scale's files that take longest, longest first (20-55 s each on CI's three
workers, 2026-12-06), whatever their number of tests: the load scenario is one test of
fifty seconds, and by size it would go out last and end the pass alone."""


def end_to_end_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` in the order their groups go out to the workers: ``LONGEST_FIRST``,
    then tests/e2e, then the rest, each by its number of tests, most first (xdist's own
    order)."""
    sizes = Counter(xdist_group(item.nodeid) for item in items)

    def order(item: pytest.Item) -> tuple[int, bool, int]:
        group = xdist_group(item.nodeid)
        rank = LONGEST_FIRST.index(group) if group in LONGEST_FIRST else len(LONGEST_FIRST)
        return (rank, not group.startswith("tests/e2e/"), -sizes[group])

    return sorted(items, key=order)  # stable: a group's tests keep their order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if getattr(config.option, "loadgroup", False):  # a worker of --dist loadgroup
        items[:] = end_to_end_first(items)


def pytest_report_header() -> str:
    """Which browser the browser tests drive (``tests/e2e/browser.py`` picks it)."""
    from tests.e2e.browser import CHROMIUM

    return f"browser tests: {CHROMIUM}"


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

    def own(layer: dict[str, Any]) -> dict[str, Any]:
        if "Redis" not in str(layer["BACKEND"]):
            return layer
        return {**layer, "CONFIG": {**layer.get("CONFIG", {}), "prefix": f"{worker}-asgi"}}

    layers = settings.CHANNEL_LAYERS
    settings.CHANNEL_LAYERS = {alias: own(layer) for alias, layer in layers.items()}


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
