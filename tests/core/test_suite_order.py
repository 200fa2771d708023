"""The order in which ``make test`` hands test files to its pytest-xdist workers
(tests/conftest.py): a file is one group, the longest go out first, so that no long file
starts last and ends the pass alone."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from tests.conftest import LONGEST_FIRST, end_to_end_first, xdist_group
from tests.scale.cluster import worker_redis_databases

ROOT = Path(__file__).resolve().parents[2]


def items(*nodeids: str) -> list[pytest.Item]:
    return [cast(pytest.Item, SimpleNamespace(nodeid=nodeid)) for nodeid in nodeids]


def test_a_file_is_a_group_in_every_folder() -> None:
    assert xdist_group("tests/scale/test_load.py::test_x") == "tests/scale/test_load.py"
    assert xdist_group("tests/e2e/test_server.py::test_y[a::b]") == "tests/e2e/test_server.py"


def test_every_file_named_longest_first_exists() -> None:
    missing = [name for name in LONGEST_FIRST if not (ROOT / name).is_file()]
    assert missing == [], "renamed or removed: mend LONGEST_FIRST in tests/conftest.py"


def test_the_longest_go_first_then_end_to_end_then_the_most_tests() -> None:
    load, worker_runs = LONGEST_FIRST[0], LONGEST_FIRST[1]
    given = items(
        "tests/studio/test_one.py::test_a",
        "tests/studio/test_three.py::test_a",
        f"{worker_runs}::test_a",
        "tests/studio/test_three.py::test_b",
        "tests/e2e/test_page.py::test_a",
        f"{worker_runs}::test_b",
        "tests/studio/test_three.py::test_c",
        f"{load}::test_a",
    )

    ordered = [item.nodeid for item in end_to_end_first(given)]

    assert ordered == [
        f"{load}::test_a",
        f"{worker_runs}::test_a",
        f"{worker_runs}::test_b",
        "tests/e2e/test_page.py::test_a",
        "tests/studio/test_three.py::test_a",
        "tests/studio/test_three.py::test_b",
        "tests/studio/test_three.py::test_c",
        "tests/studio/test_one.py::test_a",
    ]


def test_each_xdist_worker_has_redis_databases_no_other_uses() -> None:
    assert worker_redis_databases(None, 14) == (14, 13)
    assert worker_redis_databases("gw0", 14) == (14, 13)
    taken = [db for n in range(7) for db in worker_redis_databases(f"gw{n}", 14)]
    assert sorted(taken) == list(range(1, 15))
    with pytest.raises(ValueError, match="gw7"):
        worker_redis_databases("gw7", 14)
