"""A person's turn in a run: deciding a pending approval, answering a question the
agent asked. The one way either reaches a run, from the API, the websocket or a page.

A decision is bound to the call and to the arguments it was shown (their hash), and
stored, immutably, as an ``ApprovalDecision`` row in the same transaction that delivers
it to the run: the run's row is locked first (``select_for_update``; on SQLite every
transaction takes the write lock), so of two people deciding one call at once, one
stores and delivers the decision and the other is told it was decided already. A
delivery the run refuses rolls the row back. The tool runs at most once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.db import IntegrityError, OperationalError, transaction

from agents_core import approvals as core_approvals
from agents_core import events as core_events
from studio import runs
from studio.db import db_sync_to_async
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.ledger import ledger_of, run_awaiting
from studio.live import AnswerBody, ApprovalBody
from studio.models import AWAITING_RUN_STATUSES, ApprovalDecision, Event, Run, RunStatus, Session
from studio.runs import parking

Via = Literal["page", "api", "socket"]
MAX_PROBLEMS = 5
LOCKED_RETRY_S = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One decision of several (``decide_many``): stored, or why not."""

    call_id: str
    decision: ApprovalDecision | None = None
    code: str = ""
    message: str = ""


async def decide_approval(
    session: Session, body: ApprovalBody, *, user: User, via: Via
) -> ApprovalDecision:
    """Decide one of ``session``'s pending approvals; see ``decide``."""
    return await db_sync_to_async(decide)(session, body, user=user, via=via)


def decide(session: Session, body: ApprovalBody, *, user: User, via: Via) -> ApprovalDecision:
    """Store ``body``'s decision on one of ``session``'s pending approvals and deliver
    it to the run waiting on that call, wherever it executes. Runs in a thread, never
    inside another transaction (the run must see the row committed).

    ``ConflictError``: ``approval_not_pending`` (no run waits on the call),
    ``approval_decided`` (someone decided it first), ``approval_stale`` (the call's
    arguments are not the ones shown), ``approval_not_delivered`` (a worker did not
    answer in time). ``InvalidInputError`` when edited arguments do not match the
    tool's JSON Schema, or go with a denial."""
    for delay in LOCKED_RETRY_S:
        try:
            return _decide_once(session, body, user=user, via=via)
        except OperationalError as exc:
            # Only an in-memory SQLite (shared cache: the tests') refuses a second writer
            # at once instead of waiting; the decision was not delivered, so try again.
            if "locked" not in str(exc):
                raise
        time.sleep(delay)
    return _decide_once(session, body, user=user, via=via)


def _decide_once(session: Session, body: ApprovalBody, *, user: User, via: Via) -> ApprovalDecision:
    with transaction.atomic():
        run = _locked_latest_run(session)
        if run is not None:
            _check_undecided(run, body.call_id)
        request = pending_request(run, body.call_id) if run is not None else None
        if run is None or request is None:
            raise ConflictError(
                f"no call {body.call_id!r} is waiting for approval", code="approval_not_pending"
            )
        if body.args_hash != request.args_hash:
            raise ConflictError(
                "these are not the arguments the call waits with: reload and decide again",
                code="approval_stale",
            )
        _check_edits(body, request)
        row = _store(session, run, request, body, user=user, via=via)
        if run.status == RunStatus.WAITING:  # parked: it goes on from the record, decided
            parking.wake(run)
            return row
        reply = core_approvals.ApprovalDecision(**body.model_dump(), decided_by=user.get_username())
        async_to_sync(runs.executor().decide)(run.pk, session.key, reply)
    return row


def decide_many(
    owner: User, bodies: Sequence[tuple[Session, ApprovalBody]], *, via: Via
) -> list[Outcome]:
    """Decide several approvals, each on its own: one refused does not stop the rest."""
    outcomes = []
    for session, body in bodies:
        try:
            outcomes.append(Outcome(body.call_id, decide(session, body, user=owner, via=via)))
        except (ConflictError, InvalidInputError) as exc:
            outcomes.append(Outcome(body.call_id, code=exc.code, message=exc.message))
    return outcomes


def pending_request(run: Run, call_id: str) -> core_events.ApprovalInfo | None:
    """The request of ``run``'s call ``call_id``, if it waits for a decision."""
    if run.status not in AWAITING_RUN_STATUSES:
        return None
    return _request(run, call_id)


def _locked_latest_run(session: Session) -> Run | None:
    """The session's latest started run, locked until the transaction ends."""
    started = Run.objects.select_for_update().filter(session=session).exclude(start_seq=None)
    return started.order_by("-created_at").first()


def _request(run: Run, call_id: str) -> core_events.ApprovalInfo | None:
    if not ledger_of(run).awaits_approval(call_id):
        return None
    payload = (
        Event.objects.filter(
            session_id=run.session_id,
            seq__gt=run.start_seq or 0,
            type=core_events.EventType.APPROVAL_REQUEST,
            payload__approval__call_id=call_id,
        )
        .order_by("-seq")
        .values_list("payload", flat=True)
        .first()
    )
    if payload is None:
        return None
    return core_events.Event.model_validate(payload).approval


def _check_undecided(run: Run, call_id: str) -> None:
    taken = ApprovalDecision.objects.filter(run=run, call_id=call_id).first()
    if taken is not None:
        who = taken.decided_by_name or taken.get_channel_display()
        raise ConflictError(
            f"call {call_id!r} was decided already ({taken.decision}, by {who})",
            code="approval_decided",
        )


def _check_edits(body: ApprovalBody, request: core_events.ApprovalInfo) -> None:
    if body.edited_args is None:
        return
    if body.decision == "deny":
        problem = Problem((), "invalid", "edited arguments go with approve, not deny")
        raise InvalidInputError("edited_args", [problem])
    problems = schema_problems(request.args_schema, body.edited_args)
    if problems:
        raise InvalidInputError("edited_args", problems)


def schema_problems(schema: dict[str, Any] | None, args: dict[str, Any]) -> list[Problem]:
    """How ``args`` break the tool's JSON Schema for its arguments (none without one)."""
    if not schema:
        return []
    from jsonschema import validators  # on first use, as agents_core.structured does

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    errors = sorted(cls(schema).iter_errors(args), key=lambda e: list(map(str, e.path)))
    return [
        Problem(tuple(error.absolute_path), "schema", error.message)
        for error in errors[:MAX_PROBLEMS]
    ]


def _store(
    session: Session,
    run: Run,
    request: core_events.ApprovalInfo,
    body: ApprovalBody,
    *,
    user: User,
    via: Via,
) -> ApprovalDecision:
    approved = None
    if body.decision == "approve":
        approved = body.edited_args if body.edited_args is not None else request.args
    try:
        with transaction.atomic():
            return ApprovalDecision.objects.create(
                session=session,
                run=run,
                call_id=request.call_id,
                tool=request.tool,
                decision=body.decision,
                channel=via,
                decided_by=user,
                decided_by_name=user.get_username(),
                args_hash=request.args_hash,
                args_shown=request.args,
                args_approved=approved,
                reason=body.reason,
            )
    except IntegrityError:  # decided meanwhile (a database without the run's lock)
        raise ConflictError(
            f"call {request.call_id!r} was decided already", code="approval_decided"
        ) from None


async def answer_question(session: Session, body: AnswerBody, *, answered_by: str) -> None:
    """Deliver the user's answer to the question ``body`` names to the run that asked it,
    wherever it executes. ``ConflictError`` ``question_not_pending`` when no run of the
    session waits on that question, or it refused the answer (answered already, another
    question); ``question_not_delivered`` when a worker did not answer in time."""
    answer = core_approvals.UserAnswer(**body.model_dump(), answered_by=answered_by)
    run_id = await db_sync_to_async(run_awaiting)(session.pk, answer.call_id, "answer")
    if run_id is None:
        raise ConflictError(
            f"no question {answer.call_id!r} is waiting for an answer",
            code="question_not_pending",
        )
    await runs.executor().decide(run_id, session.key, answer)
