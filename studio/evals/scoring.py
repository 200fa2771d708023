"""Scoring one case result: its ``Outcome`` read from its session's stored events and
runs, its verdicts from the evaluators (``agents_core.evals.evaluators``), judges built
from the owner's model configurations, and the status they add up to.

How verdicts become the case's status:

- a case whose run did not finish (failed, cancelled, interrupted past its resumes,
  a limit it hit) is ``error``, whatever its verdicts say: its output is not an answer
  to judge. The verdicts are still computed and stored, so the page shows what was
  checked (a ``limits`` evaluator explains a limit hit, for instance);
- otherwise any ``error`` verdict (a judge that timed out or answered nonsense, a judge
  naming a model configuration the owner does not have) makes it ``error``, any
  ``failed`` verdict ``failed``, and else it ``passed``: every verdict passed or was
  skipped. A case that expects nothing any evaluator checks (all skipped) passes once
  its run finished: it asked for nothing more;
- its score is the mean of its verdicts' scores (skipped ones have none); a case in
  ``error`` has none, as the summary's mean leaves it out: its output was no answer to
  judge, or a judge could not say (its verdicts are still stored and shown).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from agents_core import events as core_events
from agents_core.evals.contracts import Case, EvaluatorSpec, JudgeSpec, Outcome, Verdict
from agents_core.evals.evaluators import evaluate_all
from agents_core.evals.outcome import outcome_from_events
from agents_core.llm.contracts import BaseLlm
from studio.agents import llms
from studio.models import FINISHED_RUN_STATUSES, ModelConfig, Run
from studio.models.evals import CaseStatus, EvalCaseResult
from studio.runs import run_costs

SPECS = TypeAdapter(list[EvaluatorSpec])


@dataclass(frozen=True, slots=True)
class Scoring:
    """What scoring one result needs, read from the database."""

    result_id: uuid.UUID
    case: Case
    outcome: Outcome
    specs: list[EvaluatorSpec]
    judges: Mapping[str, ModelConfig]
    finished: bool
    """Its last run went to its end (succeeded or degraded)."""


@dataclass(frozen=True, slots=True)
class Scored:
    result_id: uuid.UUID
    status: CaseStatus
    verdicts: list[Verdict]
    score: float | None
    outcome: Outcome
    error_message: str


def prepare(result_id: uuid.UUID) -> Scoring | None:
    """What scoring result ``result_id`` needs; ``None`` when it has no session."""
    result = EvalCaseResult.objects.select_related(
        "eval_run__dataset_version", "eval_run__owner", "session"
    ).get(pk=result_id)
    session = result.session
    if session is None:
        return None
    eval_run = result.eval_run
    case = Case.model_validate(eval_run.dataset_version.cases[result.case_index])
    runs = list(session.runs.order_by("created_at"))
    payloads = session.events.order_by("seq").values_list("payload", flat=True)
    events = [core_events.Event.model_validate(payload) for payload in payloads]
    total = run_costs.session_cost(session.pk)
    last = runs[-1] if runs else None
    finished = last is not None and last.status in FINISHED_RUN_STATUSES
    outcome = outcome_from_events(
        events,
        state=session.state,
        cost=total.amount if total.complete else None,
        tokens=sum(run.input_tokens + run.output_tokens for run in runs),
        latency_s=_latency(runs),
        error=None if finished else _error_of(last),
    )
    specs = SPECS.validate_python(eval_run.evaluators)
    named = {spec.model for spec in specs if isinstance(spec, JudgeSpec)}
    configs = ModelConfig.objects.filter(owner=eval_run.owner, name__in=named)
    judges = {config.name: config for config in configs}
    return Scoring(result.pk, case, outcome, specs, judges, finished)


async def score(scoring: Scoring) -> Scored:
    """Run the evaluators over the prepared case and decide its status."""
    judges: dict[str, BaseLlm] = {}
    for spec in scoring.specs:
        if not isinstance(spec, JudgeSpec) or spec.model in judges:
            continue
        config = scoring.judges.get(spec.model)
        if config is not None:  # one it lacks: the evaluators answer an error verdict
            judges[spec.model] = llms.build_llm(config, timeout_s=spec.timeout_s)
    verdicts = await evaluate_all(scoring.specs, scoring.case, scoring.outcome, judges=judges)
    status, message = decide(verdicts, scoring.outcome, finished=scoring.finished)
    score = None if status is CaseStatus.ERROR else mean_score(verdicts)
    return Scored(scoring.result_id, status, verdicts, score, scoring.outcome, message)


def decide(
    verdicts: Sequence[Verdict], outcome: Outcome, *, finished: bool
) -> tuple[CaseStatus, str]:
    """The case's status and why (see the module docstring)."""
    if not finished:
        return CaseStatus.ERROR, outcome.error or "the case's run did not finish"
    errors = [v for v in verdicts if v.status == "error"]
    if errors:
        return CaseStatus.ERROR, "; ".join(f"{v.evaluator}: {v.detail}" for v in errors)
    if any(v.status == "failed" for v in verdicts):
        return CaseStatus.FAILED, ""
    return CaseStatus.PASSED, ""


def mean_score(verdicts: Sequence[Verdict]) -> float | None:
    scores = [v.score for v in verdicts if v.score is not None and v.status != "skipped"]
    return sum(scores) / len(scores) if scores else None


def store(result: EvalCaseResult, scored: Scored, now: Any) -> None:
    """Write ``scored`` on ``result`` (locked by the caller)."""
    outcome = scored.outcome
    result.status = scored.status
    result.verdicts = [verdict.model_dump(mode="json") for verdict in scored.verdicts]
    result.score = scored.score
    result.cost = outcome.cost
    result.tokens = outcome.tokens
    result.latency_s = outcome.latency_s
    result.steps = outcome.steps
    result.error_message = scored.error_message[:10_000]
    result.ended_at = now
    result.save()


def _latency(runs: Sequence[Run]) -> float:
    if not runs:
        return 0.0
    first = runs[0].started_at or runs[0].created_at
    last = runs[-1].ended_at or first
    return max((last - first).total_seconds(), 0.0)


def _error_of(run: Run | None) -> str:
    if run is None:
        return "the case's run never started"
    if run.error_code or run.error_message:
        return f"{run.error_code or run.status}: {run.error_message}".strip()
    return f"the case's run ended {run.status}"
