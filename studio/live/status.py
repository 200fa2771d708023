"""A session's status as stored: its latest run and what that run waits on."""

from __future__ import annotations

import uuid

from studio import wire
from studio.ledger import CallLedger, WaitingFor, ledger_of, waiting_for
from studio.live.protocol import Status
from studio.models import IngestedTrace, Run, RunStatus, Session


def snapshot(session_pk: uuid.UUID) -> Status:
    """The session's status read from the database: its latest run and, while that run
    is active, what it waits on (its ledger of open calls).

    The run is read before the last seq: a run ends only after its last event is
    stored, so ``last_seq`` covers every event of the run as read. A run recorded as
    ended (cancelled elsewhere) while its executor still holds it is shown as running:
    the executor stores its last events, lets go, then publishes the final status."""
    run = Run.objects.filter(session_id=session_pk).order_by("-created_at").first()
    last_seq = Session.objects.filter(pk=session_pk).values_list("last_seq", flat=True).first()
    if run is None:
        return Status(None, None, last_seq or 0)
    if not run.is_active and run.owner_process:
        run.status, run.ended_at = RunStatus.RUNNING, None
        run.error_code = run.error_message = ""
    # Only a running run waits on a call: the others need no read of their events. What
    # an ingested one waits on is not known here: its agent runs elsewhere.
    awaits = run.status in (RunStatus.RUNNING, RunStatus.WAITING)
    waiting: WaitingFor
    if awaits and IngestedTrace.objects.filter(run_id=run.pk).exists():
        waiting = "elsewhere"
    else:
        waiting = waiting_for(ledger_of(run) if awaits else CallLedger(), run.status)
    return Status(wire.run_payload(run), waiting, last_seq or 0)
