"""Evals: datasets of cases in immutable versions, and eval runs of an agent version
against one dataset version, each case (and repeat) a real session of its own.

The cases are ``agents_core.evals.contracts.Case`` values stored as their JSON; the
evaluators ``EvaluatorSpec`` values, the verdicts ``Verdict`` values.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from agents_core import specs as core_specs
from studio.models import AgentVersion, ImmutableError, Session, cost_field

MAX_CONCURRENCY = 16
MAX_REPEATS = 10


class Dataset(models.Model):
    """A named set of eval cases of one owner; its cases live in numbered versions."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="datasets"
    )
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(core_specs.NAME_PATTERN)],
        help_text="Letters, digits, '_' or '-': `run_evals --dataset NAME` names it.",
    )
    description = models.TextField(blank=True)
    current_version = models.ForeignKey(
        "DatasetVersion", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="dataset_name_unique_per_owner")
        ]

    def __str__(self) -> str:
        return self.name


class DatasetVersion(models.Model):
    """The cases of a dataset at one moment: written once, never edited. Adding,
    changing or removing a case saves a new version; an eval run pins the one it used."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    cases = models.JSONField(default=list)
    """A list of ``agents_core.evals.contracts.Case`` as JSON."""
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset", "-number"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "number"], name="dataset_version_number_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.dataset.name} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableError("a dataset version is never edited; save a new one")
        super().save(*args, **kwargs)


class EvalStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    # Every case ran and was judged, passing or not: "finished", as its pass rate, not
    # its status, says how it went (a green "succeeded" beside 0% misread).
    SUCCEEDED = "succeeded", "Finished"
    FAILED = "failed"  # the eval itself could not go on (not: some cases failed)
    CANCELLED = "cancelled"


ACTIVE_EVAL_STATUSES = (EvalStatus.QUEUED, EvalStatus.RUNNING)


class EvalRun(models.Model):
    """An agent version run against a dataset version, ``repeats`` times per case, at
    most ``concurrency`` case sessions at once, judged by ``evaluators``."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="eval_runs"
    )
    agent_version = models.ForeignKey(
        AgentVersion, on_delete=models.PROTECT, related_name="eval_runs"
    )
    dataset_version = models.ForeignKey(
        DatasetVersion, on_delete=models.PROTECT, related_name="eval_runs"
    )
    evaluators = models.JSONField(default=list)
    """A list of ``agents_core.evals.contracts.EvaluatorSpec`` as JSON."""
    concurrency = models.PositiveSmallIntegerField(
        default=4, validators=[MinValueValidator(1), MaxValueValidator(MAX_CONCURRENCY)]
    )
    repeats = models.PositiveSmallIntegerField(
        default=1, validators=[MinValueValidator(1), MaxValueValidator(MAX_REPEATS)]
    )
    status = models.CharField(max_length=16, choices=EvalStatus.choices, default=EvalStatus.QUEUED)
    summary = models.JSONField(default=dict, blank=True)
    """Set as cases end: counts, pass rate, pass@k, cost, latency percentiles."""
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="eval_run_by_owner")]

    def __str__(self) -> str:
        return f"{self.agent_version} on {self.dataset_version}"


class CaseStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"  # the case's run or an evaluator could not decide: never a pass
    CANCELLED = "cancelled"


class EvalCaseResult(models.Model):
    """One repeat of one case of an eval run: its session and its verdicts."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    eval_run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_index = models.PositiveIntegerField()
    case_name = models.CharField(max_length=200)
    repeat = models.PositiveSmallIntegerField(default=0)
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="eval_results"
    )
    status = models.CharField(max_length=16, choices=CaseStatus.choices, default=CaseStatus.PENDING)
    verdicts = models.JSONField(default=list, blank=True)
    """A list of ``agents_core.evals.contracts.Verdict`` as JSON."""
    score = models.FloatField(null=True, blank=True)
    """The mean of its verdicts' scores, 0..1; empty when none scored."""
    cost = cost_field()
    tokens = models.PositiveBigIntegerField(default=0)
    latency_s = models.FloatField(null=True, blank=True)
    steps = models.PositiveIntegerField(default=0)
    error_message = models.TextField(blank=True)
    turns_sent = models.PositiveSmallIntegerField(default=0)
    """How many of the case's user turns were sent to its session so far: the next
    turn goes once the run of the last one finished."""
    resumes = models.PositiveSmallIntegerField(default=0)
    """How often its run was resumed after a restart interrupted it (at most
    ``studio.evals.engine.MAX_RESUMES``, then the case is an error)."""
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["eval_run", "case_index", "repeat"]
        constraints = [
            models.UniqueConstraint(
                fields=["eval_run", "case_index", "repeat"], name="eval_case_result_unique"
            )
        ]
        indexes = [models.Index(fields=["eval_run", "status"], name="eval_result_by_status")]

    def __str__(self) -> str:
        return f"{self.case_name} #{self.repeat + 1}"
