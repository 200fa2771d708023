"""Which evals a server's sweep advances (``studio.evals.sweep``): all of them on its
first sweep and every ``FULL_SWEEP_S``; between those only the ones whose rows say
they have work (queued, a case run that ended since the last sweep, an interrupted run
to resume, a lost session, pending cases held back), never one whose cases are all
waiting on runs that are still going. The rows are set by hand here: the engine's own
tests (``test_evals_engine``) run real evals through it."""

from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from studio import evals
from studio.evals.sweep import FULL_SWEEP_S, Due
from studio.models import Run, RunStatus
from studio.models.evals import CaseStatus, EvalCaseResult, EvalRun, EvalStatus
from tests.studio.conftest import make_session
from tests.support.eval_runs import case, echo_agent, make_dataset

pytestmark = pytest.mark.django_db


def running_eval(owner: User, name: str) -> tuple[EvalRun, EvalCaseResult, Run]:
    """An eval of two cases at concurrency 1: the first running (its run going), the
    second pending."""
    agent = owner.agents.filter(name="echo").first() or echo_agent(owner)
    dataset = make_dataset(owner, name, [case("a", "one"), case("b", "two")])
    eval_run = evals.create_eval(owner, agent=agent, dataset=dataset, concurrency=1)
    EvalRun.objects.filter(pk=eval_run.pk).update(status=EvalStatus.RUNNING)
    first = eval_run.results.get(case_index=0)
    first.session = make_session(owner, agent)
    first.status = CaseStatus.RUNNING
    first.save()
    run = Run.objects.create(session=first.session, status=RunStatus.RUNNING)
    return eval_run, first, run


def end(run: Run, status: RunStatus) -> None:
    run.status, run.ended_at = status, timezone.now()
    run.save(update_fields=["status", "ended_at"])


def test_only_evals_whose_case_runs_moved_are_advanced_between_full_sweeps(ada: User) -> None:
    moving, _, run = running_eval(ada, "moving")
    still, _, _ = running_eval(ada, "still")
    due = Due()
    assert sorted(due.evals()) == sorted([moving.pk, still.pk])  # the first sweep: all
    assert due.evals() == []  # both wait on runs still going
    end(run, RunStatus.SUCCEEDED)
    assert due.evals() == [moving.pk]  # its case run ended since the last sweep
    assert due.evals() == []  # that end is advanced once in this process
    due.full_at = time.monotonic() - FULL_SWEEP_S  # a minute on: everything again
    assert sorted(due.evals()) == sorted([moving.pk, still.pk])
    EvalRun.objects.filter(pk=moving.pk).update(status=EvalStatus.SUCCEEDED)
    due.full_at = time.monotonic() - FULL_SWEEP_S
    assert due.evals() == [still.pk]  # a finished eval never


def test_an_interrupted_case_run_is_due_until_it_is_resumed(ada: User) -> None:
    eval_run, first, run = running_eval(ada, "restart")
    due = Due()
    due.evals()
    end(run, RunStatus.INTERRUPTED)
    assert due.evals() == [eval_run.pk]
    assert due.evals() == [eval_run.pk]  # the resume was put off (the run cap): again
    Run.objects.create(session=first.session, status=RunStatus.RUNNING, resumed_from=run)
    assert due.evals() == []


def test_queued_held_back_and_orphaned_evals_are_due(ada: User) -> None:
    eval_run, first, _run = running_eval(ada, "states")
    due = Due()
    due.evals()
    assert due.evals() == []
    EvalRun.objects.filter(pk=eval_run.pk).update(status=EvalStatus.QUEUED)
    assert due.evals() == [eval_run.pk]  # not started yet
    EvalRun.objects.filter(pk=eval_run.pk).update(status=EvalStatus.RUNNING)
    EvalCaseResult.objects.filter(pk=first.pk).update(status=CaseStatus.PASSED)
    assert due.evals() == [eval_run.pk]  # a pending case and room: the run cap held it
    assert due.evals() == [eval_run.pk]
    EvalCaseResult.objects.filter(pk=first.pk).update(status=CaseStatus.RUNNING, session=None)
    assert due.evals() == [eval_run.pk]  # its session was deleted: the case is an error
