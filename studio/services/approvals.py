"""A person's turn in a run: deciding a pending approval, answering a question the
agent asked. The one way either reaches a run, from the API, the websocket or a page."""

from __future__ import annotations

from agents_core.approvals import ApprovalDecision, UserAnswer
from studio import runs
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.ledger import run_awaiting
from studio.live import AnswerBody, ApprovalBody
from studio.models import Session


async def decide_approval(session: Session, body: ApprovalBody, *, decided_by: str) -> None:
    """Deliver a decision on one of ``session``'s pending approvals to the run waiting
    on that call, wherever it executes. ``ConflictError`` ``approval_not_pending`` when
    no run of the session waits on it (per its stored events), or the run refused it
    (decided already, other arguments); ``approval_not_delivered`` when a worker did
    not answer in time."""
    decision = ApprovalDecision(**body.model_dump(), decided_by=decided_by)
    run_id = await db_sync_to_async(run_awaiting)(session.pk, decision.call_id)
    if run_id is None:
        raise ConflictError(
            f"no call {decision.call_id!r} is waiting for approval", code="approval_not_pending"
        )
    await runs.executor().decide(run_id, session.key, decision)


async def answer_question(session: Session, body: AnswerBody, *, answered_by: str) -> None:
    """Deliver the user's answer to the question ``body`` names to the run that asked it,
    wherever it executes. ``ConflictError`` ``question_not_pending`` when no run of the
    session waits on that question, or it refused the answer (answered already, another
    question); ``question_not_delivered`` when a worker did not answer in time."""
    answer = UserAnswer(**body.model_dump(), answered_by=answered_by)
    run_id = await db_sync_to_async(run_awaiting)(session.pk, answer.call_id, "answer")
    if run_id is None:
        raise ConflictError(
            f"no question {answer.call_id!r} is waiting for an answer",
            code="question_not_pending",
        )
    await runs.executor().decide(run_id, session.key, answer)
