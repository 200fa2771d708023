"""What the eval pages read of the signed-in user's eval runs: only theirs, and their
summaries (``studio.evals.summary``, stored on each run as its cases end) in words."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse

from studio import figures
from studio.models.evals import DatasetVersion, EvalRun


def owned_eval_runs(request: HttpRequest) -> QuerySet[EvalRun]:
    return EvalRun.objects.filter(owner_id=request.user.pk).select_related(
        "agent_version__agent", "dataset_version__dataset"
    )


def run_label(run: EvalRun) -> str:
    """``calculator@3 on arithmetic@2 · Mar 4 14:02 · succeeded``: as a picker lists it."""
    when = f"{run.created_at:%b} {run.created_at.day} {run.created_at:%H:%M}"
    return f"{agent_at(run)} on {dataset_at(run.dataset_version)} · {when} · {run.status}"


def agent_at(run: EvalRun) -> str:
    return f"{run.agent_version.agent.name}@{run.agent_version.number}"


def dataset_at(version: DatasetVersion) -> str:
    return f"{version.dataset.name}@{version.number}"


def dataset_url(version: DatasetVersion) -> str:
    return reverse("dataset", args=[version.dataset_id])


@dataclass(frozen=True, slots=True)
class Summary:
    """An eval run's summary as the pages write it."""

    done: int
    total: int
    passed: int
    judged: int
    pass_rate: float | None
    pass_at_k: float | None
    k: int
    cost: str
    cost_value: Decimal | None
    p50: float | None
    p95: float | None
    per_case: list[dict[str, Any]]


def summary(run: EvalRun, stored: dict[str, Any] | None = None) -> Summary:
    """``stored`` (a ``studio.evals.summary.summarise`` dict; by default the run's own)
    in words; an eval that has not started yet counts its cases times its repeats."""
    data = run.summary if stored is None else stored
    counts = data.get("counts") or {}
    at_k = data.get("pass_at_k") or {}
    cost = data.get("cost") or {}
    latency = data.get("latency_s") or {}
    total = cost_total = cost.get("total")
    return Summary(
        done=data.get("done") or 0,
        total=data.get("total") or len(run.dataset_version.cases) * run.repeats,
        passed=counts.get("passed") or 0,
        judged=data.get("judged") or 0,
        pass_rate=data.get("pass_rate"),
        pass_at_k=at_k.get("value"),
        k=at_k.get("k") or run.repeats,
        cost=figures.cost(total, complete=bool(cost.get("complete", True))) if total else "",
        cost_value=None if cost_total is None else Decimal(cost_total),
        p50=latency.get("p50"),
        p95=latency.get("p95"),
        per_case=data.get("per_case") or [],
    )


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"
