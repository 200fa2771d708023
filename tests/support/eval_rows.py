"""Eval rows made straight in the database, for the eval pages' tests: a dataset
version of named cases and a finished eval run with a result per case and repeat."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from studio.evals.rows import save_summary
from studio.models import AgentVersion, Session
from studio.models.evals import (
    CaseStatus,
    Dataset,
    DatasetVersion,
    EvalCaseResult,
    EvalRun,
    EvalStatus,
)


def dataset_version(owner: User, names: list[str], name: str = "arithmetic") -> DatasetVersion:
    dataset, _ = Dataset.objects.get_or_create(owner=owner, name=name)
    number = dataset.versions.count() + 1
    cases = [
        {"name": case, "input": {"turns": [f"{case}?"]}, "expect": {"final_output": "5"}}
        for case in names
    ]
    version = DatasetVersion.objects.create(dataset=dataset, number=number, cases=cases)
    Dataset.objects.filter(pk=dataset.pk).update(current_version=version)
    return version


def verdict(status: str, detail: str = "", **extra: Any) -> dict[str, Any]:
    score = {"passed": 1.0, "failed": 0.0}.get(status)
    return {"evaluator": "exact", "status": status, "score": score, "detail": detail, **extra}


def eval_run(
    version: AgentVersion,
    dataset: DatasetVersion,
    outcomes: dict[str, list[str]],
    *,
    minutes_ago: int = 0,
    session: Session | None = None,
    status: str = EvalStatus.SUCCEEDED,
    verdicts: dict[str, list[dict[str, Any]]] | None = None,
) -> EvalRun:
    """An eval run whose case ``name`` ended with the statuses ``outcomes[name]`` (one
    per repeat), each result's session ``session``."""
    when = timezone.now() - timedelta(minutes=minutes_ago)
    repeats = max(len(statuses) for statuses in outcomes.values())
    run = EvalRun.objects.create(
        owner=version.agent.owner,
        agent_version=version,
        dataset_version=dataset,
        evaluators=[{"kind": "exact"}],
        repeats=repeats,
        status=status,
        started_at=when,
        ended_at=None if status in (EvalStatus.QUEUED, EvalStatus.RUNNING) else when,
    )
    EvalRun.objects.filter(pk=run.pk).update(created_at=when)
    for index, case in enumerate(c["name"] for c in dataset.cases):
        for repeat, outcome in enumerate(outcomes.get(case, [])):
            done = outcome not in (CaseStatus.PENDING, CaseStatus.RUNNING)
            EvalCaseResult.objects.create(
                eval_run=run,
                case_index=index,
                case_name=case,
                repeat=repeat,
                session=session,
                status=outcome,
                verdicts=(verdicts or {}).get(case) or ([verdict(outcome)] if done else []),
                score=1.0 if outcome == CaseStatus.PASSED else 0.0 if done else None,
                cost=Decimal("0.0012") if done else None,
                tokens=120 if done else 0,
                latency_s=0.5 + index / 10 if done else None,
                steps=1,
            )
    save_summary(run)  # as the engine stores it when cases end
    run.refresh_from_db()
    return run
