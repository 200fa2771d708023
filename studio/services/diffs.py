"""Comparing two runs (``studio.diffs``): the caller has checked that both are the
user's own (their querysets are owner-scoped)."""

from __future__ import annotations

from studio.diffs.compare import RunDiff, compare
from studio.diffs.reads import run_record
from studio.models import Run


def compare_runs(a: Run, b: Run) -> RunDiff:
    """The step-aligned diff of run ``a`` (the baseline) and run ``b``."""
    return compare(run_record(a), run_record(b))
