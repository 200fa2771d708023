"""Scale-out tests: PostgreSQL and Redis on loopback (``DATABASE_URL``, ``REDIS_URL``).

Without a PostgreSQL ``DATABASE_URL`` (the plain ``pytest`` run, on SQLite) every test
here is skipped. With one, unreachable servers skip them too, except under ``CI=true``,
where they fail the run: CI must never pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.scale.cluster import (
    SCALE_REDIS_DB,
    Cluster,
    Worker,
    database_url,
    worker_redis_databases,
)
from tests.scale.reachable import unreachable


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    scale = [item for item in items if "tests/scale/" in item.nodeid]
    if not scale:
        return
    if not database_url().startswith(("postgres://", "postgresql://")):
        reason = "tests/scale need DATABASE_URL=postgres://... and REDIS_URL (see the Makefile)"
    elif not os.environ.get("REDIS_URL"):
        reason = "tests/scale need REDIS_URL=redis://... (see the Makefile)"
    else:
        reason = unreachable() or ""
        if reason and os.environ.get("CI") == "true":
            raise pytest.UsageError(f"CI=true: {reason}")
    if reason:
        for item in scale:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session", autouse=True)
def _redis_databases_of_this_worker() -> Iterator[None]:
    """This process's Redis databases, in the environment the servers, workers and
    benchmark scripts it starts inherit: ``SCALE_REDIS_DB`` for the clusters, and
    ``LOAD_REDIS_DB`` for the load scenario (``bench.load``, which would otherwise use 13).
    Under pytest-xdist each worker has its own, so that two workers' clusters do not
    flush each other's channel layers."""
    base = int(os.environ.get("SCALE_REDIS_DB", SCALE_REDIS_DB))
    scale, load = worker_redis_databases(os.environ.get("PYTEST_XDIST_WORKER"), base)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SCALE_REDIS_DB", str(scale))
        patch.setenv("LOAD_REDIS_DB", str(load))
        yield


@pytest.fixture
def worker(cluster: Cluster) -> Iterator[Worker]:
    """A run worker for the module's ``cluster`` (each module defines its own); its
    output is printed once the test is done, for the failure report."""
    yield cluster.worker()
    cluster.print_output()
