"""What the eval pages read of the signed-in user's eval runs: only theirs, as the JSON
the run page's script renders (the same fields the API and the websocket send), and
their figures in words."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse

from studio import figures
from studio.models.evals import CaseStatus, DatasetVersion, EvalCaseResult, EvalRun

DONE = {CaseStatus.PASSED, CaseStatus.FAILED, CaseStatus.ERROR, CaseStatus.CANCELLED}


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
    """The dataset's page, where the datasets' pages exist (another branch adds them),
    else its version in the API."""
    try:
        return reverse("dataset", args=[version.dataset_id])
    except NoReverseMatch:
        return f"/api/datasets/{version.dataset_id}/versions/{version.number}/"


def result_json(result: EvalCaseResult) -> dict[str, Any]:
    return {
        "id": str(result.pk),
        "case_index": result.case_index,
        "case_name": result.case_name,
        "repeat": result.repeat,
        "status": result.status,
        "verdicts": result.verdicts,
        "score": result.score,
        "cost": None if result.cost is None else str(result.cost),
        "tokens": result.tokens,
        "latency_s": result.latency_s,
        "steps": result.steps,
        "error_message": result.error_message,
        "session": None if result.session_id is None else str(result.session_id),
    }


def run_json(run: EvalRun) -> dict[str, Any]:
    return {
        "id": str(run.pk),
        "status": run.status,
        "summary": run.summary,
        "error_message": run.error_message,
        "repeats": run.repeats,
        "cases": len(run.dataset_version.cases),
    }


# The summary, as the pages write it


@dataclass(frozen=True, slots=True)
class Summary:
    done: int
    total: int
    passed: int
    pass_rate: float | None
    pass_at_k: float | None
    cost: str
    cost_value: Decimal | None
    p50: float | None
    p95: float | None


def summary(run: EvalRun, results: list[EvalCaseResult]) -> Summary:
    """Figures of the results so far: pass rate over the finished ones, pass@k (a case
    passes when any of its repeats did), cost, and latency percentiles."""
    done = [r for r in results if r.status in DONE]
    passed = sum(1 for r in done if r.status == CaseStatus.PASSED)
    cases = {r.case_index for r in done}
    cases_passed = {r.case_index for r in done if r.status == CaseStatus.PASSED}
    known = [r.cost for r in done if r.cost is not None]
    latencies = sorted(r.latency_s for r in done if r.latency_s is not None)
    return Summary(
        done=len(done),
        total=max(len(results), len(run.dataset_version.cases) * run.repeats),
        passed=passed,
        pass_rate=passed / len(done) if done else None,
        pass_at_k=len(cases_passed) / len(cases) if cases else None,
        cost=figures.cost(sum(known), complete=len(known) == len(done)) if known else "",
        cost_value=sum(known, Decimal(0)) if known else None,
        p50=_percentile(latencies, 0.5),
        p95=_percentile(latencies, 0.95),
    )


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def case_rates(results: list[EvalCaseResult]) -> dict[str, tuple[int, int]]:
    """Per case name: (repeats passed, repeats finished)."""
    rates: dict[str, tuple[int, int]] = {}
    for result in results:
        if result.status not in DONE or result.status == CaseStatus.CANCELLED:
            continue
        passed, done = rates.get(result.case_name, (0, 0))
        rates[result.case_name] = (passed + (result.status == CaseStatus.PASSED), done + 1)
    return rates


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"
