"""Reading an eval run's rows for its summary and its viewers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from studio.evals.summary import Figures, summarise
from studio.models.evals import EvalCaseResult, EvalRun

FIGURE_FIELDS = (
    "case_index",
    "case_name",
    "repeat",
    "status",
    "score",
    "cost",
    "tokens",
    "latency_s",
)


def figures_of(results: Iterable[EvalCaseResult]) -> list[Figures]:
    return [
        Figures(
            case_index=r.case_index,
            case_name=r.case_name,
            repeat=r.repeat,
            status=r.status,
            score=r.score,
            cost=r.cost,
            tokens=r.tokens,
            latency_s=r.latency_s,
        )
        for r in results
    ]


def summary_of(eval_run: EvalRun, *, k: int | None = None) -> dict[str, Any]:
    """``eval_run``'s summary, read now from its results (``k`` defaults to its repeats)."""
    rows = eval_run.results.only(*FIGURE_FIELDS, "eval_run_id")
    return summarise(figures_of(rows), k=k or eval_run.repeats)


def save_summary(eval_run: EvalRun) -> None:
    """Store ``eval_run``'s summary as its results now say (the caller holds its lock)."""
    eval_run.summary = summary_of(eval_run)
    eval_run.save(update_fields=["summary"])
