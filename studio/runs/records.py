"""A run's record through its life: queued with its user message, claimed, leased, ended.

- ``queue_run`` creates the run and stores the user's message as the turn's first event,
  in the transaction that queues it: whatever happens next (the process dies before the
  run is claimed, its MCP servers never answer), the session holds what the user said.
- ``claim_run`` marks it running in one process, holding a lease that process renews
  (``renew_lease``); a lease left to expire means that process died (``recovery``).
- ``end_run`` is the one way a run ends, whatever ended it: see its docstring.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from agents_core import events as core_events
from agents_core.contracts import Usage
from studio import session_service
from studio.ledger import Ledger, ledger_of
from studio.models import ACTIVE_RUN_STATUSES, Run, RunStatus, Session, SessionStatus

PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""Who owns the runs this process executes (``Run.owner_process``)."""

INTERNAL_ERROR = "internal_error"
INTERRUPTED = "interrupted"
CANCELLED = "cancelled"
IN_DOUBT = (
    "in_doubt: the server running this call stopped before it answered; the call may or "
    "may not have taken effect, and it will not be run again automatically."
)
NOT_RUN = "interrupted: the server stopped before this call was approved; it did not run."


@dataclass(frozen=True, slots=True)
class Ending:
    """How a run ends: its status and, unless it succeeded, the error that ended it."""

    status: RunStatus
    code: str = ""
    message: str = ""

    @classmethod
    def of(cls, error: core_events.ErrorInfo | None) -> Ending:
        """The ending a terminal error event (or none: success) stands for."""
        if error is None:
            return cls(RunStatus.SUCCEEDED)
        status = RunStatus.CANCELLED if error.code == CANCELLED else RunStatus.FAILED
        return cls(status, error.code, error.message)


@dataclass(frozen=True, slots=True)
class Ended:
    """What ``end_run`` did: the run as recorded and the events it appended."""

    run: Run
    events: list[core_events.Event]


def queue_run(session: Session, text: str) -> Run:
    """A queued run of ``session`` (locked by the caller's transaction) for ``text``,
    whose user message is stored with it."""
    run = Run.objects.create(session=session, message=text, start_seq=session.last_seq)
    said = core_events.user_message(session.key, text)
    stored = session_service.append_event_sync(session.key, said)
    run.invocation_id = stored.invocation_id
    run.save(update_fields=["invocation_id"])
    return run


def claim_run(run: Run, *, owner: str, lease_s: float) -> bool:
    """Mark queued ``run`` running in process ``owner``, holding a lease of ``lease_s``
    seconds; False when it is no longer queued (cancelled meanwhile)."""
    now = timezone.now()
    fields: dict[str, object] = {
        "status": RunStatus.RUNNING,
        "started_at": now,
        "owner_process": owner,
        "lease_expires_at": now + timedelta(seconds=lease_s),
    }
    with transaction.atomic():
        if run.start_seq is None:  # queued before runs stored their user message
            sessions = Session.objects.select_for_update().values_list("last_seq", flat=True)
            fields["start_seq"] = sessions.get(pk=run.session_id)
        if not Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED).update(**fields):
            return False
        Session.objects.filter(pk=run.session_id).update(status=SessionStatus.RUNNING)
    for name, value in fields.items():
        setattr(run, name, value)
    return True


def renew_lease(run: Run, *, owner: str, lease_s: float) -> bool:
    """Extend ``owner``'s lease on active ``run``; False once the run is no longer
    active or no longer ``owner``'s (cancelled, or interrupted by recovery)."""
    until = timezone.now() + timedelta(seconds=lease_s)
    mine = Run.objects.filter(pk=run.pk, owner_process=owner, status__in=ACTIVE_RUN_STATUSES)
    return bool(mine.update(lease_expires_at=until))


def request_cancel(run: Run) -> bool:
    """Record that ``run`` (locked by the caller) is cancelled by request. A run that
    never started ends here (True); a running one is ended by its executor, which
    stops it on hearing of this (False)."""
    ending = Ending(RunStatus.CANCELLED, CANCELLED, "cancelled by request")
    if run.status == RunStatus.QUEUED:
        end_run(run.pk, ending)
        return True
    _record(run, ending)
    return False


def end_run(
    run_id: uuid.UUID,
    ending: Ending,
    *,
    usage: Usage | None = None,
    terminal_event_stored: bool = False,
) -> Ended | None:
    """End run ``run_id`` as ``ending`` says, in one transaction: append a
    ``tool_response`` for each call it leaves open (when it ends interrupted), then its
    terminal ``error`` event (unless it succeeded, or ``terminal_event_stored``: the
    runner stored it), and record its status, error, ``usage`` and end, releasing its
    lease. Every way a run ends goes through here: success, error, limit, cancel,
    interrupt on restart, a lost worker.

    Idempotent: a run already ended returns ``None`` and appends nothing, so a retry
    after a lost commit never stores anything twice. A run cancelled while its executor
    still held it keeps that record: its executor's ending only adds what is missing.
    """
    with transaction.atomic():
        run = (
            Run.objects.select_for_update(of=("self",))  # PostgreSQL: not the nullable joins
            .select_related("session__agent_version__agent")
            .filter(pk=run_id)
            .first()
        )
        if run is None or (not run.is_active and not run.owner_process):
            return None
        appended = _close_open_calls(run) if ending.status == RunStatus.INTERRUPTED else []
        if not run.is_active:  # cancelled by request while its executor held it
            ending = Ending(RunStatus(run.status), run.error_code, run.error_message)
        if ending.status == RunStatus.INTERRUPTED:
            ending = Ending(ending.status, ending.code, _why_interrupted(ending, appended))
        if ending.status != RunStatus.SUCCEEDED and not terminal_event_stored:
            error = terminal_error(run, ending)
            appended.append(session_service.append_event_sync(run.session.key, error))
        if usage is not None:
            run.input_tokens, run.output_tokens = usage.input_tokens, usage.output_tokens
        run.owner_process, run.lease_expires_at = "", None
        _record(run, ending)
    return Ended(run, appended)


def terminal_error(run: Run, ending: Ending) -> core_events.Event:
    """The unsaved terminal error event of ``run``'s ending, authored by its agent."""
    version = run.session.agent_version
    author = str(version.spec.get("name") or version.agent.name) if version else "studio"
    return core_events.Event(
        type=core_events.EventType.ERROR,
        invocation_id=run.invocation_id or core_events.new_id(),
        session_id=run.session.key,
        author=author,
        branch=author,
        error=core_events.ErrorInfo(code=ending.code, message=ending.message, failure="terminal"),
    )


def _record(run: Run, ending: Ending) -> None:
    run.status = ending.status
    run.ended_at = run.ended_at or timezone.now()
    run.error_code, run.error_message = ending.code, ending.message
    run.save()
    Session.objects.filter(pk=run.session_id).update(status=run.status, updated_at=run.ended_at)


def _close_open_calls(run: Run) -> list[core_events.Event]:
    """A stored ``tool_response`` error for each call an interrupted run left open:
    "in doubt" when it may have started, "did not run" when it waited for an approval
    or was denied. Nothing is ever run again automatically."""
    ledger = ledger_of(run)
    return [
        session_service.append_event_sync(run.session.key, _marker(run, ledger, call_id))
        for call_id in ledger.open_calls
    ]


def _marker(run: Run, ledger: Ledger, call_id: str) -> core_events.Event:
    call = ledger.open_calls[call_id]
    text = NOT_RUN if ledger.never_ran(call) else IN_DOUBT
    return core_events.Event(
        type=core_events.EventType.TOOL_RESPONSE,
        invocation_id=call.invocation_id,
        session_id=run.session.key,
        author=call.author,
        branch=call.branch,
        parts=[
            core_events.ToolResponsePart(
                call_id=call.call_id, name=call.name, result=text, is_error=True
            )
        ],
    )


def _why_interrupted(ending: Ending, markers: list[core_events.Event]) -> str:
    in_doubt = [
        f"{result.name} ({result.call_id})"
        for marker in markers
        for result in marker.tool_results
        if result.output == IN_DOUBT
    ]
    if not in_doubt:
        return ending.message
    return (
        f"{ending.message}; {len(in_doubt)} tool call(s) may or may not have taken effect and "
        f"will not be run again automatically: {', '.join(in_doubt)}"
    )
