"""Starting an eval run: an agent version against a dataset version, checked first."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from pydantic import ValidationError

from agents_core.evals import registry
from agents_core.evals.contracts import (
    Case,
    ContainsSpec,
    CustomSpec,
    EvaluatorSpec,
    JudgeSpec,
    LimitsSpec,
    StateSpec,
    TrajectorySpec,
)
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.evals import engine, live
from studio.evals.rows import save_summary
from studio.models import Agent, AgentVersion, ModelConfig
from studio.models.evals import Dataset, DatasetVersion, EvalCaseResult, EvalRun

MAX_RESULTS = 5_000
"""The most case sessions one eval run may start (cases times repeats)."""


def default_evaluators() -> list[EvaluatorSpec]:
    """What an eval checks when it names no evaluator: whatever each case expects. Each
    reports ``skipped`` on a case that does not expect what it checks: the expected
    final output contained in the answer (not equal: models word things their own way),
    the expected tool calls made (a subset, in any order, arguments as a JSON subset),
    the expected state, the case's limits."""
    return [ContainsSpec(), TrajectorySpec(mode="subset"), StateSpec(), LimitsSpec()]


def create_eval(
    owner: AbstractBaseUser,
    *,
    agent: Agent,
    dataset: Dataset,
    version: AgentVersion | None = None,
    dataset_version: DatasetVersion | None = None,
    evaluators: Sequence[EvaluatorSpec] | None = None,
    concurrency: int = 4,
    repeats: int = 1,
) -> EvalRun:
    """A new eval run of ``owner``'s ``agent`` (``version``, default its current one)
    on ``dataset`` (``dataset_version``, default its current one), its first cases
    started once committed. ``ConflictError`` when either has no version or the dataset
    version has no case; ``InvalidInputError`` on ``evaluators`` for a judge naming a
    model configuration ``owner`` does not have, or too many case sessions."""
    version = _agent_version(agent, version)
    dataset_version = _dataset_version(dataset, dataset_version)
    cases = _cases(dataset_version)
    specs = list(evaluators) if evaluators else default_evaluators()
    _check_evaluators(owner, specs)
    if len(cases) * repeats > MAX_RESULTS:
        message = f"{len(cases)} cases x {repeats} repeats is over {MAX_RESULTS} case sessions"
        raise InvalidInputError("repeats", [Problem((), "too_many_cases", message)])
    with transaction.atomic():
        eval_run = EvalRun.objects.create(
            owner_id=owner.pk,
            agent_version=version,
            dataset_version=dataset_version,
            evaluators=[spec.model_dump(mode="json", by_alias=True) for spec in specs],
            concurrency=concurrency,
            repeats=repeats,
        )
        EvalCaseResult.objects.bulk_create(
            EvalCaseResult(eval_run=eval_run, case_index=i, case_name=case.name, repeat=r)
            for r in range(repeats)
            for i, case in enumerate(cases)
        )
        save_summary(eval_run)
        engine.step(eval_run.pk)  # its first cases: their runs go once committed
        transaction.on_commit(lambda: live.notify_sync(eval_run.pk))
    eval_run.refresh_from_db()
    return eval_run


def _agent_version(agent: Agent, version: AgentVersion | None) -> AgentVersion:
    chosen = version or agent.current_version
    if chosen is None:
        raise ConflictError(f"agent {agent.name!r} has no version yet", code="agent_has_no_version")
    if chosen.agent_id != agent.pk:
        raise ConflictError("that version is of another agent", code="version_of_another_agent")
    return chosen


def _dataset_version(dataset: Dataset, version: DatasetVersion | None) -> DatasetVersion:
    chosen = version or dataset.current_version
    if chosen is None:
        raise ConflictError(
            f"dataset {dataset.name!r} has no version yet", code="dataset_has_no_version"
        )
    if chosen.dataset_id != dataset.pk:
        raise ConflictError("that version is of another dataset", code="version_of_another_dataset")
    return chosen


def _cases(version: DatasetVersion) -> list[Case]:
    try:
        cases = [Case.model_validate(case) for case in version.cases]
    except ValidationError as exc:  # stored by an older contract: refuse, do not half-run
        raise ConflictError(
            f"{version} holds a case Studio cannot read: {exc.errors()[0]['msg']}",
            code="dataset_case_invalid",
        ) from None
    if not cases:
        raise ConflictError(f"{version} has no case", code="dataset_empty")
    return cases


def _check_evaluators(owner: AbstractBaseUser, specs: Sequence[EvaluatorSpec]) -> None:
    """Every judge names one of ``owner``'s model configurations, every custom
    evaluator one registered, with the parameters it takes (each would only be error
    verdicts later, after every case ran)."""
    named = {spec.model for spec in specs if isinstance(spec, JudgeSpec)}
    have = set(
        ModelConfig.objects.filter(owner_id=owner.pk, name__in=named).values_list("name", flat=True)
    )
    problems = [
        Problem((i, "model"), "unknown_model", f"you have no model configuration {spec.model!r}")
        for i, spec in enumerate(specs)
        if isinstance(spec, JudgeSpec) and spec.model not in have
    ]
    known = {one.name for one in registry.registered()}
    problems += [
        Problem((i, "name"), "unknown_evaluator", f"no custom evaluator {spec.name!r}")
        for i, spec in enumerate(specs)
        if isinstance(spec, CustomSpec) and spec.name not in known
    ]
    problems += [
        Problem((i, "params", *where), "invalid_params", said)
        for i, spec in enumerate(specs)
        if isinstance(spec, CustomSpec)
        for where, said in registry.params_problems(spec.name, spec.params)
    ]
    if problems:
        raise InvalidInputError("evaluators", problems)
