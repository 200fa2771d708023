"""The persistence benchmark still runs, in a tiny size (no timing is asserted)."""

from __future__ import annotations

import socket

import pytest

from tests.support.bench import run_bench


def postgres_listening() -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", 5432)) == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_persistence_appends_through_the_session_service(backend: str) -> None:
    if backend == "postgresql" and not postgres_listening():
        pytest.skip("no PostgreSQL on 127.0.0.1:5432")
    args = ("--backend", backend, "--events", "12", "--warmup", "2", "--seconds", "1")

    (result,) = run_bench("persistence", *args)

    assert result["name"] == f"persistence.{backend}"
    assert result["details"]["events"] == 12
