"""A recorded session to fork: two finished turns, the first with a calculator call,
written as the runner stores them (``records`` queue, claim and end the runs)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from agents_core import events as core_events
from agents_core.contracts import Usage
from studio.models import Run, RunStatus, Session
from studio.runs import records
from studio.runs.records import Ending
from studio.session_service import append_event_sync

E = core_events.EventType
QUESTION = "what is 1 + 1?"
RESULT = "2"
ANSWER = "1 + 1 is 2."


def record_turn(session: Session, text: str, steps: list[dict[str, Any]]) -> Run:
    """A finished run of ``session`` for ``text`` whose agent (``calc``) stored
    ``steps`` (Event fields) between its start and end."""
    with transaction.atomic():
        run = records.queue_run(Session.objects.select_for_update().get(pk=session.pk), text)
    assert records.claim_run(run, owner="test:1:fork", lease_s=30)

    def event(type: core_events.EventType, **fields: Any) -> core_events.Event:
        return core_events.Event(
            type=type,
            invocation_id=run.invocation_id,
            session_id=session.key,
            author="calc",
            branch="calc",
            **fields,
        )

    append_event_sync(session.key, event(E.AGENT_START))
    for step in steps:
        append_event_sync(session.key, event(**step))
    append_event_sync(session.key, event(E.AGENT_END))
    records.end_run(run.pk, Ending(RunStatus.SUCCEEDED))
    return Run.objects.get(pk=run.pk)


def call(call_id: str, expression: str) -> core_events.ToolCallPart:
    return core_events.ToolCallPart(
        call_id=call_id, name="calculator", args={"expression": expression}
    )


def recorded_session(session: Session) -> Session:
    """``session`` with two turns: #1 user, #2 start, #3 the call, #4 its result (which
    sets ``last_result``), #5 the answer (sets ``answer``; with usage), #6 end; then #7
    user "thanks", #8 start, #9 reply, #10 end."""
    record_turn(
        session,
        QUESTION,
        [
            {"type": E.AGENT_MESSAGE, "parts": [call("c1", "1 + 1")]},
            {
                "type": E.TOOL_RESPONSE,
                "parts": [
                    core_events.ToolResponsePart(call_id="c1", name="calculator", result=RESULT)
                ],
                "actions": core_events.EventActions(state_delta={"last_result": RESULT}),
            },
            {
                "type": E.AGENT_MESSAGE,
                "parts": [core_events.TextPart(text=ANSWER)],
                "actions": core_events.EventActions(state_delta={"answer": ANSWER}),
                "usage": Usage(input_tokens=12, output_tokens=5),
            },
        ],
    )
    record_turn(
        session,
        "thanks",
        [{"type": E.AGENT_MESSAGE, "parts": [core_events.TextPart(text="You're welcome.")]}],
    )
    session.refresh_from_db()
    return session
