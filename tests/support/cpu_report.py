"""``--cpu-report=N``: the N test files that used the most CPU, for whoever trims the
suite when it grows toward CI's 20 minutes.

The suite keeps both cores busy from start to end, so what makes it long is CPU, not
wall time: ``--durations`` ranks a test that waits ninety seconds on a server's leases
above a browser sweep that burns as much CPU as the waiting one's whole file. Each file
is charged the CPU of the pytest process while its tests ran (setup and teardown
included, so a module's servers and browser count where they stop) and of the child
processes it started and waited for (Daphnes, Chromium, benchmark scripts, manage.py).
A session-scoped fixture is charged to the first file that asks for it. Under
pytest-xdist each worker counts its own files and the controller prints the total.

What no process waited for is missing, so the total falls short of what the run used:
Chromium's renderers (children of its zygote, which outlives its parent and is reaped
by init), PostgreSQL's and Redis's server processes. With process accounting on
(``accton``) through a run of the SQLite pass, 2026-12-06: the machine's two cores were
98% busy for 873 s (1,718 s of CPU), processes used 1,667 s, Chromium's ~610 of them;
this report counted 1,197. A file that drives a browser costs more than it says. (Since
2026-12-08 the tests drive Chromium's headless shell, ``tests/e2e/browser.py``: CI's
SQLite pass went from 904 to 587 s, and this report from 1,133 to 863 s.)
"""

from __future__ import annotations

import resource
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

_spent = pytest.StashKey[Counter[str]]()
"""CPU seconds by test file, in this process (a worker's, or the controller's total)."""
_WORKER_OUTPUT = "cpu_report_seconds"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-report",
        type=int,
        default=0,
        metavar="N",
        help="list the N test files that used the most CPU, with their child processes",
    )


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_spent] = Counter()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if not item.config.getoption("cpu_report"):
        yield
        return
    started = _cpu_seconds()
    yield
    item.config.stash[_spent][item.nodeid.split("::", 1)[0]] += _cpu_seconds() - started


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller adds them up
        workeroutput[_WORKER_OUTPUT] = dict(session.config.stash[_spent])


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, in the controller
def pytest_testnodedown(node: Any, error: Any) -> None:
    spent = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT, {})
    node.config.stash[_spent].update(spent)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    shown = config.getoption("cpu_report")
    spent = config.stash[_spent]
    if not shown or not spent:
        return
    total = sum(spent.values())
    terminalreporter.write_sep("=", f"test files by CPU used (the {shown} costliest)")
    for path, seconds in spent.most_common(shown):
        terminalreporter.write_line(f"{seconds:8.1f}s {seconds / total:6.1%}  {path}")
    terminalreporter.write_line(f"{total:8.1f}s in all, over {len(spent)} files")
