"""Comparing eval runs: two side by side per case, and many over time per agent version.

``compare(a, b)`` matches cases by name (two dataset versions may reorder them) and
sorts them regressions first (a case whose pass rate fell from ``a`` to ``b``: passed
in ``a``, failed in ``b`` with one repeat each), then improvements, then unchanged, then
cases only one of the two ran. Its deltas are ``b - a`` of the pass rate, the total
cost and the latency p50 (``None`` when either side has none).

``history`` lists the owner's ended eval runs of an agent on a dataset, oldest first,
each with its agent version, pass rate, cost and latency: the points of the chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from studio.evals.rows import figures_of, summary_of
from studio.evals.summary import cases
from studio.models import Agent
from studio.models.evals import Dataset, EvalRun, EvalStatus

ORDER = {"regression": 0, "improvement": 1, "unchanged": 2, "only_a": 3, "only_b": 4}


def compare(a: EvalRun, b: EvalRun) -> dict[str, Any]:
    summary_a, summary_b = summary_of(a), summary_of(b)
    per_a = _by_name(a)
    per_b = _by_name(b)
    rows: list[dict[str, Any]] = []
    for name in [*per_a, *(n for n in per_b if n not in per_a)]:
        one, two = per_a.get(name), per_b.get(name)
        rows.append(
            {
                "case_name": name,
                "change": _change(one, two),
                "a": one,
                "b": two,
            }
        )
    rows.sort(key=lambda row: ORDER[str(row["change"])])
    return {
        "a": summary_a,
        "b": summary_b,
        "cases": rows,
        "delta": {
            "pass_rate": _minus(summary_b["pass_rate"], summary_a["pass_rate"]),
            "cost": _cost_delta(summary_a, summary_b),
            "latency_p50_s": _minus(_p50(summary_b), _p50(summary_a)),
        },
    }


def _by_name(eval_run: EvalRun) -> dict[str, dict[str, Any]]:
    per_case = cases(figures_of(eval_run.results.all()))
    return {case["case_name"]: case for case in per_case}


def _change(one: Mapping[str, Any] | None, two: Mapping[str, Any] | None) -> str:
    if one is None:
        return "only_b"
    if two is None:
        return "only_a"
    rate_a, rate_b = one["pass_rate"], two["pass_rate"]
    if rate_a is None or rate_b is None or rate_a == rate_b:
        return "unchanged"
    return "regression" if rate_b < rate_a else "improvement"


def _minus(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _p50(summary: Mapping[str, Any]) -> float | None:
    value: float | None = summary["latency_s"]["p50"]
    return value


def _cost_delta(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    one, two = a["cost"]["total"], b["cost"]["total"]
    return None if one is None or two is None else str(Decimal(two) - Decimal(one))


def history(
    owner: AbstractBaseUser, *, agent: Agent | None = None, dataset: Dataset | None = None
) -> list[dict[str, Any]]:
    """The owner's ended eval runs (of ``agent``, on ``dataset``), oldest first."""
    runs = EvalRun.objects.filter(owner_id=owner.pk, status=EvalStatus.SUCCEEDED)
    if agent is not None:
        runs = runs.filter(agent_version__agent=agent)
    if dataset is not None:
        runs = runs.filter(dataset_version__dataset=dataset)
    points = []
    for run in runs.select_related("agent_version__agent", "dataset_version__dataset").order_by(
        "created_at"
    )[:500]:
        summary = run.summary or {}
        points.append(
            {
                "eval_run": run.pk,
                "agent": run.agent_version.agent.name,
                "agent_version": run.agent_version.number,
                "dataset": run.dataset_version.dataset.name,
                "dataset_version": run.dataset_version.number,
                "created_at": run.created_at,
                "pass_rate": summary.get("pass_rate"),
                "cost": (summary.get("cost") or {}).get("total"),
                "latency_p50_s": (summary.get("latency_s") or {}).get("p50"),
                "latency_p95_s": (summary.get("latency_s") or {}).get("p95"),
            }
        )
    return points
