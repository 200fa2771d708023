"""A run's record through its life: queued with its user message, claimed, leased, ended.

- ``queue_run`` creates the run and stores the user's message as the turn's first event,
  in the transaction that queues it: whatever happens next (the process dies before the
  run is claimed, its MCP servers never answer), the session holds what the user said.
  ``queue_resumed_run`` queues the rest of an interrupted run: no message of its own.
- ``claim_run`` marks it running in one process, holding a lease that process renews
  (``renew_lease``); a lease left to expire means that process died (``recovery``).
- ``end_run`` is the one way a run ends, whatever ended it: see its docstring. What the
  ended run's record says of it (cost, wall time, spans, roll-ups) is ``figures``'.
"""

from __future__ import annotations

import functools
import os
import socket
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from agents_core import events as core_events
from agents_core import failures as core_failures
from agents_core import ledger as core_ledger
from agents_core.contracts import Usage
from studio import session_service
from studio.agents import specs, versions
from studio.budgets import days as budget_days
from studio.ledger import ledger_of
from studio.models import (
    ACTIVE_RUN_STATUSES,
    FINISHED_RUN_STATUSES,
    ApprovalDecision,
    IngestedTrace,
    Run,
    RunStatus,
    Session,
    SessionStatus,
)
from studio.models.approvals import DecisionChannel
from studio.runs import figures
from studio.traces import otel

PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""Who owns the runs this process executes (``Run.owner_process``)."""

INTERNAL_ERROR = "internal_error"
DEGRADED = "degraded"
INTERRUPTED = "interrupted"
CANCELLED = "cancelled"
IN_DOUBT = (
    f"{core_ledger.IN_DOUBT}: the server running this call stopped before it answered; the "
    "call may or may not have taken effect, and it will not be run again automatically."
)
NOT_RUN = (
    f"{core_ledger.NOT_RUN}: the server stopped before this call started (or while a read-only "
    "call ran); it had no effect."
)


@dataclass(frozen=True, slots=True)
class Ending:
    """How a run ends: its status and, unless it succeeded, the error that ended it (or,
    degraded, what failed on the way)."""

    status: RunStatus
    code: str = ""
    message: str = ""

    @classmethod
    def of(
        cls,
        error: core_events.ErrorInfo | None,
        degradations: Sequence[core_events.ErrorInfo] = (),
    ) -> Ending:
        """The ending a terminal error event stands for; without one, success, or
        ``degraded`` when failures were let through on the way (``degradations``)."""
        if error is None and degradations:
            summary = core_failures.degraded_summary(degradations)
            return cls(RunStatus.DEGRADED, DEGRADED, summary)
        if error is None:
            return cls(RunStatus.SUCCEEDED)
        status = RunStatus.CANCELLED if error.code == CANCELLED else RunStatus.FAILED
        return cls(status, error.code, error.message)

    @property
    def finished(self) -> bool:
        """The run went to its end (succeeded or degraded): no terminal error."""
        return self.status in FINISHED_RUN_STATUSES


@dataclass(frozen=True, slots=True)
class Ended:
    """What ``end_run`` did: the run as recorded and the events it appended."""

    run: Run
    events: list[core_events.Event]


def queue_run(session: Session, text: str, *, files: Sequence[core_events.FilePart] = ()) -> Run:
    """A queued run of ``session`` (locked by the caller's transaction) for ``text``,
    whose user message is stored with it, with the references of attached ``files``."""
    run = Run.objects.create(session=session, message=text, start_seq=session.last_seq)
    said = core_events.user_message(session.key, text, files=files)
    stored = session_service.append_event_sync(session.key, said)
    run.invocation_id = stored.invocation_id
    run.save(update_fields=["invocation_id"])
    return run


def queue_resumed_run(session: Session, interrupted: Run) -> Run:
    """A queued run of ``session`` (locked by the caller's transaction) that goes on
    from ``interrupted``, its latest run: no user message (the runner resumes the
    session from its record), and its invocation id chosen now, so its events, spans
    and terminal error are the run's from the start."""
    return Run.objects.create(
        session=session,
        resumed_from=interrupted,
        message="",
        start_seq=session.last_seq,
        invocation_id=core_events.new_id(),
    )


def claim_run(run: Run, *, owner: str, lease_s: float) -> bool:
    """Mark queued ``run`` running in process ``owner``, holding a lease of ``lease_s``
    seconds; False when it is no longer queued (cancelled meanwhile)."""
    now = timezone.now()
    fields: dict[str, object] = {
        "status": RunStatus.RUNNING,
        "started_at": run.started_at or now,  # a woken run started when it first did
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


def renew_lease(run: Run, *, owner: str, lease_s: float) -> RunStatus | None:
    """Extend ``owner``'s lease on active ``run`` and return the status its record
    holds (``paused`` when a pause was asked through another server); ``None`` once the
    run is no longer active or no longer ``owner``'s (cancelled, or interrupted by
    recovery)."""
    until = timezone.now() + timedelta(seconds=lease_s)
    mine = Run.objects.filter(pk=run.pk, owner_process=owner, status__in=ACTIVE_RUN_STATUSES)
    if not mine.update(lease_expires_at=until):
        return None
    status = mine.values_list("status", flat=True).first()
    return None if status is None else RunStatus(status)


def person_turn(run: Run, event: core_events.Event, *, waiting: bool) -> int:
    """Record what ``event`` (a request for a person, or their reply) changes: whether
    the session waits (``mark_waiting``), a time-out's decision (``record_fallback``).
    Returns the session's owner, whose inbox changed."""
    mark_waiting(run, waiting=waiting)
    decided = event.approval
    if decided is not None and decided.decision is not None and decided.decided_by == "timeout":
        record_fallback(run, decided)
    return owner_of(run)


def owner_of(run: Run) -> int:
    owner: int = Session.objects.values_list("owner_id", flat=True).get(pk=run.session_id)
    return owner


def mark_waiting(run: Run, *, waiting: bool) -> None:
    """Record on running ``run``'s session whether it waits for a person's approval
    (``SessionStatus.WAITING``), so lists can show and filter it; a session whose run
    ended meanwhile keeps its final status."""
    status = SessionStatus.WAITING if waiting else SessionStatus.RUNNING
    live = (SessionStatus.RUNNING, SessionStatus.WAITING)
    Session.objects.filter(pk=run.session_id, status__in=live).update(status=status)


def request_pause(run: Run) -> None:
    """Record that running ``run`` (locked by the caller) is paused by request; its
    executor holds it at its next step on hearing of this."""
    run.status = RunStatus.PAUSED
    run.save(update_fields=["status"])
    Session.objects.filter(pk=run.session_id).update(status=SessionStatus.PAUSED)


def request_resume(run: Run) -> None:
    """Record that paused ``run`` (locked by the caller) runs again; its executor lets
    it go on hearing of this."""
    run.status = RunStatus.RUNNING
    run.save(update_fields=["status"])
    waiting = ledger_of(run).waits_for_approval
    status = SessionStatus.WAITING if waiting else SessionStatus.RUNNING
    Session.objects.filter(pk=run.session_id).update(status=status)


def request_cancel(run: Run) -> bool:
    """Record that ``run`` (locked by the caller) is cancelled by request. A run that
    never started ends here (True); a running one is ended by its executor, which
    stops it on hearing of this (False)."""
    ending = Ending(RunStatus.CANCELLED, CANCELLED, "cancelled by request")
    if run.status in (RunStatus.QUEUED, RunStatus.WAITING):  # no executor holds it
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
    models: versions.VersionModels | None = None,
) -> Ended | None:
    """End run ``run_id`` as ``ending`` says, in one transaction: append a
    ``tool_response`` for each call it leaves open (when it ends interrupted), then its
    terminal ``error`` event (unless it finished: succeeded or degraded; or
    ``terminal_event_stored``: the runner stored it), and record its status, error,
    ``usage`` and end, releasing its lease. Every way a run ends goes through here:
    success, degraded, error, limit, cancel, interrupt on restart, a lost worker. Once
    committed, the run and its final spans go to the trace export
    (``studio.traces.otel``), which returns at once.

    Idempotent: a run already ended returns ``None`` and appends nothing, so a retry
    after a lost commit never stores anything twice. A run cancelled while its executor
    still held it keeps that record: its executor's ending only adds what is missing.

    ``models``: what its executor read of the version's models (its calls' models).
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
        if not run.is_active:  # cancelled by request while its executor held it
            ending = Ending(RunStatus(run.status), run.error_code, run.error_message)
            run.ended_at = None  # it ends now, its executor's last events stored (a cut call)
        closes = not ending.finished and not terminal_event_stored
        appended = _close_open_calls(run, ending) if closes else []
        if ending.status == RunStatus.INTERRUPTED:
            ending = Ending(ending.status, ending.code, _why_interrupted(ending, appended))
        if closes:
            error = terminal_error(run, ending)
            appended.append(session_service.append_event_sync(run.session.key, error))
        if usage is not None:
            run.input_tokens, run.output_tokens = usage.input_tokens, usage.output_tokens
        run.owner_process, run.lease_expires_at = "", None
        _settle(run, ending)
        spans = figures.write(run, models)
        budget_days.release_run(run.pk)  # what calls cut short still held of a budget
        # Once committed, whatever ended it: its trace is exported (when configured).
        if _exported(run):
            export = functools.partial(otel.export().run_ended, run, spans)
            transaction.on_commit(export, robust=True)
    return Ended(run, appended)


def _exported(run: Run) -> bool:
    """Whether the run's trace is exported: not a trace that came in over OTLP
    (``services.ingest``), which would otherwise go round again if Studio exported to
    itself. Only a session without an agent version can hold one."""
    if run.session.agent_version_id is not None:
        return True
    return not IngestedTrace.objects.filter(run_id=run.pk).exists()


def terminal_error(run: Run, ending: Ending) -> core_events.Event:
    """The unsaved terminal error event of ``run``'s ending, authored by its agent."""
    author = specs.root_agent_name(run.session.agent_version)
    return core_events.Event(
        type=core_events.EventType.ERROR,
        invocation_id=run.invocation_id or core_events.new_id(),
        session_id=run.session.key,
        author=author,
        branch=author,
        error=core_events.ErrorInfo(code=ending.code, message=ending.message, failure="terminal"),
    )


def _record(run: Run, ending: Ending) -> None:
    _settle(run, ending)
    figures.save_ended(run)


def _settle(run: Run, ending: Ending) -> datetime:
    run.status = ending.status
    run.ended_at = run.ended_at or timezone.now()
    run.error_code, run.error_message = ending.code, ending.message
    return run.ended_at


def _close_open_calls(run: Run, ending: Ending) -> list[core_events.Event]:
    """A stored ``tool_response`` error for each call ``run`` leaves open as it ends:
    "in doubt" when the effect journal says it started (a ``tool_started`` event),
    "did not run" otherwise (it waited for an approval, was denied, never started, or
    was read-only). Nothing is ever run again automatically."""
    if ending.status == RunStatus.INTERRUPTED:
        started, not_run = IN_DOUBT, NOT_RUN
    else:
        why = f"the run {ending.status} ({ending.code})"
        started = (
            f"{core_ledger.IN_DOUBT}: {why} while this call ran; it may or may not have taken "
            "effect, and it will not be run again automatically."
        )
        not_run = f"{core_ledger.NOT_RUN}: {why} before this call started; it had no effect."
    closing = ledger_of(run).closing_events(run.session.key, started=started, not_run=not_run)
    return [session_service.append_event_sync(run.session.key, event) for event in closing]


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


def record_fallback(run: Run, decided: core_events.ApprovalInfo) -> None:
    """Store the audit row of a decision no person took (the approval's time-out),
    once: a replayed event finds the row there."""
    approved = decided.args if decided.decision == "approve" else None
    row = ApprovalDecision(
        session_id=run.session_id,
        run=run,
        call_id=decided.call_id,
        tool=decided.tool,
        decision=decided.decision or "deny",
        channel=DecisionChannel.TIMEOUT,
        args_hash=decided.args_hash,
        args_shown=decided.args,
        args_approved=approved,
        reason=decided.reason or "nobody decided in time",
    )
    ApprovalDecision.objects.bulk_create([row], ignore_conflicts=True)
