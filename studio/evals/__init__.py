"""Eval runs: an agent version run against a dataset version, each case (and repeat)
a real session of the eval's owner, judged by the evaluators of
``agents_core.evals``. The front door for the edge (API, socket, command, admin), like
``studio.services``, whose use cases it is built from (sessions are started, runs
started, resumed and cancelled through them), so it sits above them in the layers.

- ``creating.create_eval``: check and start one; ``engine.advance``: move it on (on a
  case run's end and from every server's sweep, see ``connect``; ``sweep``: which evals
  a sweep advances); ``engine.cancel``;
- ``summary``: pure figures over results; ``compare``: two runs, and history;
- ``live``: the channel its sockets listen on.
"""

from __future__ import annotations

import uuid

from studio.db import db_sync_to_async
from studio.evals.catalogue import catalogue
from studio.evals.compare import compare, history
from studio.evals.creating import create_eval, default_evaluators
from studio.evals.engine import advance, cancel, step
from studio.evals.rows import summary_of
from studio.evals.sweep import due_evals
from studio.models import Run
from studio.models.evals import CaseStatus, EvalCaseResult

__all__ = [
    "advance",
    "cancel",
    "catalogue",
    "compare",
    "connect",
    "create_eval",
    "default_evaluators",
    "history",
    "step",
    "summary_of",
    "sweep",
]


def connect() -> None:
    """Have eval runs move on when a case's run stops, and on every server's sweep
    (``StudioConfig.ready`` calls this in every process: servers and workers)."""
    from studio.runs import hooks

    hooks.on_run_stopped(_on_run_stopped)
    hooks.on_sweep(sweep)


async def _on_run_stopped(run: Run) -> None:
    eval_run_id = await db_sync_to_async(_eval_of_session)(run.session_id)
    if eval_run_id is not None:
        await advance(eval_run_id)


def _eval_of_session(session_id: uuid.UUID) -> uuid.UUID | None:
    rows = EvalCaseResult.objects.filter(session_id=session_id, status=CaseStatus.RUNNING)
    found: uuid.UUID | None = rows.values_list("eval_run_id", flat=True).first()
    return found


async def sweep() -> None:
    """Advance the active eval runs that may have work: what a missed call or a restart
    left behind (``studio.evals.sweep`` says which)."""
    for eval_run_id in await db_sync_to_async(due_evals)():
        await advance(eval_run_id)
