"""Which eval runs a server's sweep advances (``studio.evals.sweep``, every
``STUDIO_PARKED_SWEEP_S``).

A case's run that ends tells its eval itself (``runs.hooks.on_run_stopped``), in the
process that executed it; the sweep is for what that missed, so it advances only the
active evals that may have work:

- one of whose running cases has a run that ended since the previous sweep (ended by
  recovery on another server, cancelled before it started, or by a process that died
  before it told anyone), each such run's end once in this process;
- one of whose running cases waits on an interrupted run (a resume to queue, which the
  run cap may have put off), or lost its session (its owner deleted it);
- one still queued, or with pending cases and fewer running than its concurrency (the
  owner's run cap held them back);

and every active eval on its first sweep in a process (what a restart left behind: a
case scored by a process that died mid-way) and again every ``FULL_SWEEP_S``, for
anything the above cannot see. ``engine.advance`` is idempotent and reads only rows, so
advancing an eval that had nothing to do costs a read, never a change.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.db.models.query import QuerySet
from django.utils import timezone

from studio.models import Run, RunStatus
from studio.models.evals import (
    ACTIVE_EVAL_STATUSES,
    CaseStatus,
    EvalCaseResult,
    EvalRun,
    EvalStatus,
)

FULL_SWEEP_S = 60.0
"""How often a process advances every active eval, whatever moved."""
SLACK = timedelta(seconds=10)
"""How far before the previous sweep a run's end still counts as new: a run ended by a
process whose clock is behind, or stored in a transaction that committed late."""


@dataclass(slots=True)
class Due:
    """A process's memory between sweeps: when the last full one was, when the last
    sweep read, and the run ends it advanced an eval for already."""

    full_at: float | None = None
    read_at: datetime | None = None
    seen: dict[uuid.UUID, datetime] = field(default_factory=dict)

    def evals(self) -> list[uuid.UUID]:
        """The active evals to advance now (see the module)."""
        now = timezone.now()
        full = self.full_at is None or time.monotonic() - self.full_at >= FULL_SWEEP_S
        since = self.read_at
        self.read_at = now
        active = EvalRun.objects.filter(status__in=ACTIVE_EVAL_STATUSES)
        if full or since is None:
            self.full_at = time.monotonic()
            self.seen.clear()
            return list(active.values_list("pk", flat=True))
        due = set(_with_work(active).values_list("pk", flat=True))
        return [*due, *(e for e in self._ended_since(since - SLACK) if e not in due)]

    def _ended_since(self, since: datetime) -> list[uuid.UUID]:
        """Evals with a running case whose run ended at ``since`` or later, for run ends
        not seen before."""
        ended = Run.objects.filter(
            ended_at__gte=since,
            session__eval_results__status=CaseStatus.RUNNING,
            session__eval_results__eval_run__status__in=ACTIVE_EVAL_STATUSES,
        ).values_list("pk", "ended_at", "session__eval_results__eval_run_id")
        evals: list[uuid.UUID] = []
        for run_pk, ended_at, eval_pk in ended:
            if ended_at is not None and self.seen.get(run_pk) != ended_at:
                self.seen[run_pk] = ended_at
                evals.append(eval_pk)
        self.seen = {pk: at for pk, at in self.seen.items() if at >= since}
        return evals


def _with_work(active: QuerySet[EvalRun]) -> QuerySet[EvalRun]:
    """The evals of ``active`` whose rows alone say they have work to do."""
    running = EvalCaseResult.objects.filter(eval_run=OuterRef("pk"), status=CaseStatus.RUNNING)
    interrupted = Run.objects.filter(
        session=OuterRef("session"), status=RunStatus.INTERRUPTED, resumptions__isnull=True
    )
    pending = EvalCaseResult.objects.filter(eval_run=OuterRef("pk"), status=CaseStatus.PENDING)
    running_count = running.order_by().values("eval_run").annotate(n=Count("pk")).values("n")
    return active.annotate(
        running_now=Coalesce(Subquery(running_count, output_field=IntegerField()), 0)
    ).filter(
        Q(status=EvalStatus.QUEUED)
        | Exists(running.filter(session__isnull=True))
        | Exists(running.filter(Exists(interrupted)))
        | (Exists(pending) & Q(running_now__lt=F("concurrency")))
    )


_due = Due()


def due_evals() -> list[uuid.UUID]:
    return _due.evals()
