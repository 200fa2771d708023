"""Driving an eval run from its rows: ``advance`` is the one way it moves on.

Progress lives in the database only (``EvalRun.status``, each ``EvalCaseResult``'s
status, session, ``turns_sent`` and ``resumes``, and the runs of its session), so any
process may advance any eval at any time, as often as it likes, and a restart loses
nothing. ``step`` holds the eval's row lock while it decides, for each running case:

- its session's latest run is still active: it waits;
- the run was interrupted (its server stopped): it is resumed from its last step
  (``services.resume_interrupted_run``), at most ``MAX_RESUMES`` times;
- the run finished and the case has turns left: the next turn is sent;
- else the case is scored (outside the lock: a judge may take a while), and the
  scores stored under the lock again, by ``store_scored``, only on results still
  running, so scoring twice stores once;

then starts pending cases (a new session of the owner, pinned to the eval's agent
version, from the case's state, its first turn queued) up to ``concurrency`` running
cases, and ends the eval once every case is judged. A run cap reached
(``LimitError``) leaves the case as it is: the next advance tries again.

``advance`` is called when a case's run stops (``runs.hooks.on_run_stopped``) and by
every server's sweep (``runs.hooks.on_sweep``), so a missed call only delays it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from django.db import transaction
from django.utils import timezone
from pydantic import ValidationError

from agents_core.evals.contracts import Case, Outcome
from studio import services
from studio.db import db_sync_to_async
from studio.errors import ConflictError, LimitError
from studio.evals import live, scoring
from studio.evals.rows import save_summary
from studio.models import ACTIVE_RUN_STATUSES, FINISHED_RUN_STATUSES, Run, RunStatus
from studio.models.evals import (
    ACTIVE_EVAL_STATUSES,
    CaseStatus,
    EvalCaseResult,
    EvalRun,
    EvalStatus,
)

logger = logging.getLogger("studio.evals")

MAX_RESUMES = 2
"""How often a case's run is resumed after restarts interrupted it, before the case is
an error."""
MAX_ROUNDS = 1_000
"""A bound on one ``advance``'s rounds of scoring (each round scores at least one case)."""

_scoring: set[uuid.UUID] = set()
"""The results this process is scoring right now: a sweep leaves them to the advance
that started (two processes may still both score one; it is stored once)."""


@dataclass(slots=True)
class Step:
    active: bool = False
    to_score: list[uuid.UUID] = field(default_factory=list)
    changed: list[uuid.UUID] = field(default_factory=list)


async def advance(eval_run_id: uuid.UUID) -> None:
    """Move eval run ``eval_run_id`` on as far as it goes now (see the module)."""
    for _ in range(MAX_ROUNDS):
        stepped = await db_sync_to_async(step)(eval_run_id)
        if stepped.changed:
            await live.notify(eval_run_id, stepped.changed)
        mine = [rid for rid in stepped.to_score if rid not in _scoring]
        if not mine:
            return
        _scoring.update(mine)
        try:
            scored = await asyncio.gather(*(_score(rid) for rid in mine))
            changed = await db_sync_to_async(store_scored)(
                eval_run_id, [s for s in scored if s is not None]
            )
        finally:
            _scoring.difference_update(mine)
        await live.notify(eval_run_id, changed)


async def _score(result_id: uuid.UUID) -> scoring.Scored | None:
    """``result_id`` scored; an error (never a pass) when scoring itself broke, so a
    case that cannot be read or judged does not hold its eval up forever."""
    outcome = Outcome()
    try:
        prepared = await db_sync_to_async(scoring.prepare)(result_id)
        if prepared is None:
            return None
        outcome = prepared.outcome
        return await scoring.score(prepared)
    except Exception as exc:
        logger.exception("scoring eval result %s failed", result_id)
        message = f"the case could not be judged: {type(exc).__name__}: {exc}"
        return scoring.Scored(result_id, CaseStatus.ERROR, [], None, outcome, message)


def step(eval_run_id: uuid.UUID) -> Step:
    """Under the eval's row lock: go on with its running cases, start pending ones up
    to its concurrency, end it when all are judged. Returns the cases to score."""
    with transaction.atomic():
        eval_run = (
            EvalRun.objects.select_for_update(of=("self",))
            .select_related("dataset_version", "agent_version__agent", "owner")
            .filter(pk=eval_run_id)
            .first()
        )
        if eval_run is None or eval_run.status not in ACTIVE_EVAL_STATUSES:
            return Step()
        now = timezone.now()
        stepped = Step(active=True)
        if eval_run.status == EvalStatus.QUEUED:
            eval_run.status, eval_run.started_at = EvalStatus.RUNNING, now
            eval_run.save(update_fields=["status", "started_at"])
        try:
            cases = [Case.model_validate(case) for case in eval_run.dataset_version.cases]
        except ValidationError as exc:  # the eval cannot go on: say why, stop its cases
            _fail(eval_run, f"its dataset version holds a case Studio cannot read: {exc}", now)
            return Step(changed=[result.pk for result in eval_run.results.all()])
        running = list(eval_run.results.filter(status=CaseStatus.RUNNING).select_related("session"))
        for result in running:
            match _go_on(result, cases[result.case_index], now):
                case "changed":
                    stepped.changed.append(result.pk)
                case "done":
                    stepped.to_score.append(result.pk)
        free = eval_run.concurrency - sum(r.status == CaseStatus.RUNNING for r in running)
        stepped.changed += _start_pending(eval_run, cases, free, now)
        _maybe_end(eval_run, now)
        if stepped.changed or eval_run.status not in ACTIVE_EVAL_STATUSES:
            save_summary(eval_run)
    return stepped


def _go_on(result: EvalCaseResult, case: Case, now: datetime) -> Literal["changed", "wait", "done"]:
    """Resume or send the next turn of running ``result`` if it needs it (``changed``),
    or say it still waits on its run (``wait``) or is done and to be scored."""
    session = result.session
    if session is None:  # deleted by its owner meanwhile
        result.status, result.ended_at = CaseStatus.ERROR, now
        result.error_message = "the case's session was deleted before it was judged"
        result.save(update_fields=["status", "ended_at", "error_message"])
        return "changed"
    last = session.runs.order_by("-created_at").first()
    if last is not None and last.is_active:
        return "wait"
    if last is None:
        return "done"
    try:
        if last.status == RunStatus.INTERRUPTED and result.resumes < MAX_RESUMES:
            services.resume_interrupted_run(last)
            result.resumes += 1
            result.save(update_fields=["resumes"])
            return "changed"
        if last.status in FINISHED_RUN_STATUSES and result.turns_sent < len(case.input.turns):
            services.start_run(session, case.input.turns[result.turns_sent])
            result.turns_sent += 1
            result.save(update_fields=["turns_sent"])
            return "changed"
    except LimitError:  # the owner's run cap: the next advance tries again
        return "wait"
    except ConflictError as exc:  # it cannot go on: judge what it did
        logger.warning("eval case %s cannot go on: %s", result.pk, exc.message)
    return "done"


def _start_pending(
    eval_run: EvalRun, cases: list[Case], free: int, now: datetime
) -> list[uuid.UUID]:
    if free <= 0:
        return []
    pending = eval_run.results.filter(status=CaseStatus.PENDING).order_by("repeat", "case_index")
    agent = eval_run.agent_version.agent
    started = []
    for result in pending[:free]:
        case = cases[result.case_index]
        title = f"eval: {case.name} #{result.repeat + 1}"[:200]
        try:
            with transaction.atomic():  # no session is kept for a run refused
                session = services.start_session(
                    eval_run.owner,
                    agent,
                    title=title,
                    version=eval_run.agent_version,
                    state=case.input.state,
                )
                services.start_run(session, case.input.turns[0])
        except LimitError:  # the owner's run cap: the next advance tries again
            break
        result.session, result.status, result.turns_sent = session, CaseStatus.RUNNING, 1
        result.started_at = now
        result.save(update_fields=["session", "status", "turns_sent", "started_at"])
        started.append(result.pk)
    return started


def _maybe_end(eval_run: EvalRun, now: datetime) -> None:
    left = eval_run.results.filter(status__in=(CaseStatus.PENDING, CaseStatus.RUNNING))
    if not left.exists():
        eval_run.status, eval_run.ended_at = EvalStatus.SUCCEEDED, now
        eval_run.save(update_fields=["status", "ended_at"])


def _cancel_cases(eval_run: EvalRun, now: datetime) -> list[uuid.UUID]:
    """Cancel the active runs of ``eval_run``'s open cases, and the cases."""
    open_results = eval_run.results.filter(status__in=(CaseStatus.PENDING, CaseStatus.RUNNING))
    changed = list(open_results.values_list("pk", flat=True))
    sessions = open_results.filter(session__isnull=False).values_list("session_id", flat=True)
    for run in Run.objects.filter(session_id__in=list(sessions), status__in=ACTIVE_RUN_STATUSES):
        with contextlib.suppress(ConflictError):  # it ended meanwhile
            services.cancel_run(run)
    open_results.update(status=CaseStatus.CANCELLED, ended_at=now)
    return changed


def _fail(eval_run: EvalRun, why: str, now: datetime) -> None:
    """End ``eval_run`` (locked) ``failed``: its active case runs are cancelled and its
    cases not yet judged cancelled."""
    _cancel_cases(eval_run, now)
    eval_run.status, eval_run.ended_at, eval_run.error_message = EvalStatus.FAILED, now, why
    eval_run.save(update_fields=["status", "ended_at", "error_message"])
    save_summary(eval_run)


def store_scored(eval_run_id: uuid.UUID, scored: list[scoring.Scored]) -> list[uuid.UUID]:
    """Store the scores of results still running (the first scoring of each wins);
    returns the results stored."""
    stored = []
    with transaction.atomic():
        eval_run = EvalRun.objects.select_for_update().filter(pk=eval_run_id).first()
        if eval_run is None:
            return []
        now = timezone.now()
        for one in scored:
            result = EvalCaseResult.objects.select_for_update().get(pk=one.result_id)
            if result.status != CaseStatus.RUNNING:
                continue  # scored elsewhere meanwhile, or cancelled
            scoring.store(result, one, now)
            stored.append(result.pk)
        if stored:
            save_summary(eval_run)
    return stored


def cancel(eval_run: EvalRun) -> EvalRun:
    """Cancel a queued or running eval: its cases' active runs are cancelled, its
    running and pending cases marked cancelled (judged ones stay as they are)."""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().get(pk=eval_run.pk)
        if locked.status not in ACTIVE_EVAL_STATUSES:
            raise ConflictError(f"the eval already {locked.status}", code="eval_finished")
        now = timezone.now()
        changed = _cancel_cases(locked, now)
        locked.status, locked.ended_at = EvalStatus.CANCELLED, now
        locked.save(update_fields=["status", "ended_at"])
        save_summary(locked)
        transaction.on_commit(lambda: live.notify_sync(locked.pk, changed))
    eval_run.refresh_from_db()
    return eval_run
