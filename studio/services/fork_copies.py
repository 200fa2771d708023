"""What a fork holds: copies of its parent's events and runs up to the fork point, and
the edit of the fork point (``services.forks``).

Events: new ids (the row keys follow), seq from 1 in order, the fork's session id;
everything else as stored, ``created_at`` included. Their usage and cost columns stay
empty (the payloads keep them, so the timeline shows what each call used): those calls
were paid for once, in the parent, and the roll-ups read the columns.

Runs: each of the parent's runs that began before the fork point is copied, with what it
used (``copied_from`` marks the copy, which figures and session costs never count
again). The run the fork point cuts short (it went on past it, or still runs) is copied
as ``interrupted`` (``FORKED``), ending at the fork point, its times split up to there:
that is where the fork's record of it ends, and where the fork goes on from
(``forks.continue_fork``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from agents_core import events as core_events
from agents_core.sessions import base as core_sessions
from studio import event_rows
from studio.errors import InvalidInputError, Problem
from studio.models import ACTIVE_RUN_STATUSES, Event, Run, RunStatus, Session, SessionStatus
from studio.traces.reads import run_spans
from studio.traces.timing import wall_time

E = core_events.EventType
FORKED = "forked"
"""The error code of a run copy that a fork point cut short."""
EDITABLE: dict[core_events.EventType, str] = {
    E.USER_MESSAGE: "user_message",
    E.TOOL_RESPONSE: "tool_result",
    E.AGENT_MESSAGE: "reply",
}


def edited(event: core_events.Event, text: str, call_id: str | None) -> core_events.Event:
    """``event`` saying ``text`` instead: a user message's text, a tool's result (the
    one of ``call_id``, which may be left out when it answers one call), or the model's
    reply text; marked ``edited`` with what it said before."""
    what = EDITABLE.get(event.type)
    if what is None:
        message = (
            f"a {event.type} event has nothing to edit: fork at a user message, a tool "
            "result or a reply to edit it"
        )
        raise InvalidInputError("edit", [Problem((), "not_editable", message)])
    if event.type is E.TOOL_RESPONSE:
        return _edited_result(event, text, call_id)
    original = event.text
    kept = [
        p
        for p in event.parts
        if not isinstance(p, core_events.TextPart | core_events.StructuredPart)
    ]
    parts = (
        [core_events.TextPart(text=text), *kept]
        if what == "user_message"
        else [*kept, core_events.TextPart(text=text)]
    )
    delta = {
        k: text if v == original and original else v for k, v in event.actions.state_delta.items()
    }
    info = core_events.EditInfo(what=what, original=original)
    actions = event.actions.model_copy(update={"state_delta": delta})
    return event.model_copy(update={"parts": parts, "actions": actions, "edited": info})


def _edited_result(event: core_events.Event, text: str, call_id: str | None) -> core_events.Event:
    answers = [p for p in event.parts if isinstance(p, core_events.ToolResponsePart)]
    chosen = [p for p in answers if p.call_id == call_id] if call_id else answers[:1]
    if not chosen or (call_id is None and len(answers) > 1):
        message = "name the call whose result to edit (call_id): one this response answers"
        raise InvalidInputError("call_id", [Problem((), "no_such_call", message)])
    target = chosen[0]
    parts = [p.model_copy(update={"result": text}) if p is target else p for p in event.parts]
    info = core_events.EditInfo(what="tool_result", original=target.result, call_id=target.call_id)
    return event.model_copy(update={"parts": parts, "edited": info})


def copy_into(
    fork: Session, parent: Session, rows: Sequence[Event], events: Sequence[core_events.Event]
) -> None:
    """Store in ``fork`` (new, in the caller's transaction) the copies of ``parent``'s
    event ``rows`` (as ``events`` say, the last maybe edited), its runs up to the fork
    point, and the state and status they leave it in."""
    seqs = {row.seq: index for index, row in enumerate(rows, start=1)}
    runs = _copy_runs(fork, parent, rows, seqs)
    by_invocation = {run.invocation_id: run for run in runs if run.invocation_id}
    state: dict[str, Any] = {}
    copies = []
    for (row, event), seq in zip(zip(rows, events, strict=True), seqs.values(), strict=True):
        copy = event.model_copy(
            update={"id": core_events.new_id(), "seq": seq, "session_id": fork.key}
        )
        stored = Event.from_core(fork, copy)
        stored.pk = event_rows.event_row_id(fork.key, copy.id)
        stored.usage, stored.cost, stored.cost_currency = None, None, ""
        stored.tool, stored.model = row.tool, row.model
        stored.run = by_invocation.get(row.invocation_id) if row.run_id else None
        copies.append(stored)
        core_sessions.apply_state_delta(state, copy.actions.state_delta)
    Event.objects.bulk_create(copies)
    for run in runs:
        if run.timing is None and run.ended_at is not None:  # the copy cut at the fork point
            run.timing = wall_time(run.created_at, run.started_at, run.ended_at, run_spans(run))
            run.save(update_fields=["timing"])
    said = events[-1]
    if said.edited is not None and said.type is E.USER_MESSAGE and runs:
        Run.objects.filter(pk=runs[-1].pk, start_seq=len(copies) - 1).update(message=said.text)
    fork.state = state
    fork.last_seq = len(copies)
    fork.status = runs[-1].status if runs else SessionStatus.IDLE
    fork.save(update_fields=["state", "last_seq", "status"])


def _copy_runs(
    fork: Session, parent: Session, rows: Sequence[Event], seqs: dict[int, int]
) -> list[Run]:
    """The copies of ``parent``'s runs that began before the fork point, oldest first;
    the last cut short at the fork point when the parent's went on past it."""
    point = rows[-1]
    originals = list(
        parent.runs.filter(start_seq__lt=point.seq).exclude(start_seq=None).order_by("created_at")
    )
    after = parent.events.filter(seq=point.seq + 1).values_list("invocation_id", flat=True).first()
    copies: dict[Any, Run] = {}
    for original in originals:
        copy = _copy_run(original, fork, seqs)
        copy.resumed_from = copies.get(original.resumed_from_id)
        cut = original.is_active or (after is not None and after == original.invocation_id)
        if cut and original is originals[-1]:
            copy.status, copy.error_code = RunStatus.INTERRUPTED, FORKED
            copy.error_message = (
                f"forked at #{point.seq}: this copy of the run ends there; go on from it "
                "with the fork"
            )
            copy.ended_at = max(point.created_at, original.started_at or original.created_at)
            copy.timing = None
        copies[original.pk] = copy
    Run.objects.bulk_create(copies.values())
    # created_at is auto_now_add: set the original times once created.
    for original in originals:
        Run.objects.filter(pk=copies[original.pk].pk).update(created_at=original.created_at)
        copies[original.pk].created_at = original.created_at
    return list(copies.values())


def _copy_run(original: Run, fork: Session, seqs: dict[int, int]) -> Run:
    fields = {
        name: getattr(original, name)
        for name in (
            "invocation_id",
            "message",
            "status",
            "started_at",
            "ended_at",
            "input_tokens",
            "output_tokens",
            "cost",
            "cost_currency",
            "cost_complete",
            "error_code",
            "error_message",
            "timing",
        )
    }
    start = original.start_seq or 0
    start_seq = max((new for old, new in seqs.items() if old <= start), default=0)
    status = RunStatus.INTERRUPTED if original.status in ACTIVE_RUN_STATUSES else original.status
    fields["status"] = status
    if original.status in ACTIVE_RUN_STATUSES:
        fields["ended_at"] = timezone.now()
    return Run(session=fork, copied_from=original, start_seq=start_seq, **fields)
