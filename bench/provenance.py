"""Which run measured which rows of the results table.

``run_all --only`` reruns some scripts and keeps the other rows as they were measured,
each by whichever earlier run last ran its script. Each run's machine line records
the scripts it ran (``only``; none: all of them) and the run before it (``before``), so
the table can say, for every row, when, at which commit and on which processor it was
measured, and the chain keeps only the runs that still have rows in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Run = dict[str, Any]


def earlier_runs(last: Run, modules: Sequence[str]) -> list[tuple[list[str], Run]]:
    """The runs before ``last`` that still have rows, newest first, each with the
    scripts (of ``modules``, each name once, in their order) whose rows are its."""
    if last.get("only") is None:
        return []
    assigned = set(last["only"])
    found: list[tuple[list[str], Run]] = []
    run = last.get("before")
    while run is not None and len(assigned) < len(modules):
        ran = run.get("only")
        mine = [m for m in modules if m not in assigned and (ran is None or m in ran)]
        if mine:
            found.append((mine, run))
            assigned.update(mine)
        run = run.get("before")
    return found


def trimmed(last: Run, modules: Sequence[str]) -> Run:
    """``last`` with its chain of earlier runs cut to those that still have rows."""
    chain: Run | None = None
    for _, run in reversed(earlier_runs(last, modules)):  # oldest first
        chain = _without_before(run) | ({"before": chain} if chain else {})
    return _without_before(last) | ({"before": chain} if chain else {})


def _without_before(run: Run) -> Run:
    return {key: value for key, value in run.items() if key != "before"}


def describe(last: Run, modules: Sequence[str]) -> str:
    """The table's line on the rows kept from earlier runs ("" when there are none):
    each run's scripts, date and commit, and its processor where it was not the last
    run's (figures from different processors do not compare)."""
    parts = []
    for scripts, run in earlier_runs(last, modules):
        where = "" if run.get("cpu") == last.get("cpu") else f", on {run.get('cpu')}"
        parts.append(f"{_listed(scripts)} on {run['date']}, commit {run['commit']}{where}")
    return f"Rows kept from earlier runs: {'; '.join(parts)}." if parts else ""


def _listed(names: list[str]) -> str:
    quoted = [f"`{name}`" for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
