"""End-to-end tests: a real Daphne process on loopback, real clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daphne_server import DaphneServer, daphne_server, prepare_data


@pytest.fixture(scope="session")
def seeded_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated data directory with the demo account, made once per test session."""
    return prepare_data(tmp_path_factory.mktemp("template") / "data", ("seed_demo",))


@pytest.fixture
def server(tmp_path: Path, seeded_data: Path) -> Iterator[DaphneServer]:
    """A fresh Studio on its own copy of the seeded data."""
    with daphne_server(tmp_path / "data", template=seeded_data) as started:
        yield started
