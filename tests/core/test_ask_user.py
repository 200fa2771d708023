"""Asking the user mid-run: the run waits on the question, goes on with the answer as
the tool's result, and a question left unanswered ends as the model is told."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest

from agents_core import Event, EventType, InMemorySessionService, LlmAgent, Runner
from agents_core.approvals import ApprovalDecision, ApprovalError, UserAnswer, args_hash
from agents_core.ledger import CallLedger
from agents_core.llm.resilience import BreakerRegistry
from agents_core.spans import SpanTree
from agents_core.testing import ScriptedModel, reply, tool_call
from agents_core.tools.ask_user import AskUserTool

QUESTION = {"question": "Which city?"}
HASH = args_hash("ask_user", QUESTION)


def asker(timeout_s: float = 5.0) -> Runner:
    model = ScriptedModel(
        [tool_call("ask_user", "q1", **QUESTION), reply("Booked for {last_tool_result}.")]
    )
    agent = LlmAgent("booker", model=model, tools=[AskUserTool(timeout_s=timeout_s)])
    return Runner(agent, session_service=InMemorySessionService(), breakers=BreakerRegistry())


async def run_answering(
    runner: Runner, reply_with: UserAnswer | ApprovalDecision | None
) -> tuple[list[Event], list[str]]:
    """One turn; when the question arrives, send ``reply_with`` (if any). Returns the
    events and what the broker said of the reply, if it refused it."""
    events: list[Event] = []
    refused: list[str] = []
    stream: AsyncGenerator[Event] = runner.astream(user_id="u", session_id="s", message="book")
    async for event in stream:
        if event.partial:
            continue
        events.append(event)
        if event.type is EventType.USER_QUESTION and reply_with is not None:
            try:
                runner.approvals.decide(reply_with, session_id="s")
            except ApprovalError as exc:
                refused.append(exc.message)
                runner.approvals.decide(UserAnswer(call_id="q1", args_hash=HASH, text="Oslo"))
    return events, refused


async def test_the_answer_is_the_tool_s_result_and_both_ends_are_events() -> None:
    answer = UserAnswer(call_id="q1", args_hash=HASH, text="Paris", answered_by="ada")
    events, _ = await run_answering(asker(), answer)

    kinds = [e.type for e in events]
    assert kinds.index(EventType.USER_QUESTION) < kinds.index(EventType.USER_ANSWER)
    assert kinds.index(EventType.USER_ANSWER) < kinds.index(EventType.TOOL_RESPONSE)
    [answered] = [e for e in events if e.type is EventType.USER_ANSWER]
    assert answered.question is not None
    assert (answered.question.answer, answered.question.answered_by) == ("Paris", "ada")
    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert response.tool_results[0].output == "Paris"
    assert events[-2].text == "Booked for Paris."
    # The wait is a human span inside the tool call's.
    spans = {s.name: s for s in SpanTree().observe_all(e.to_wire() for e in events).spans()}
    wait = spans["question"]
    assert (wait.kind, wait.status, wait.parent_span_id) == (
        "human",
        "ok",
        spans["ask_user"].span_id,
    )
    assert wait.attributes["answer"] == "Paris"


async def test_a_decision_or_an_answer_to_another_question_is_refused() -> None:
    decision = ApprovalDecision(call_id="q1", args_hash=HASH, decision="approve")
    _, refused = await run_answering(asker(), decision)
    assert refused == ["call 'q1' waits for an answer to its question"]

    stale = UserAnswer(call_id="q1", args_hash="0" * 64, text="Rome")
    events, refused = await run_answering(asker(), stale)
    assert refused == ["the reply is for different arguments than the pending call"]
    assert events[-2].text == "Booked for Oslo."


async def test_nobody_answering_in_time_is_told_to_the_model() -> None:
    events, _ = await run_answering(asker(timeout_s=0.01), None)
    [answered] = [e for e in events if e.type is EventType.USER_ANSWER]
    assert answered.question is not None
    assert (answered.question.answer, answered.question.answered_by) == (None, "timeout")
    [result] = next(e for e in events if e.type is EventType.TOOL_RESPONSE).tool_results
    assert result.is_error and "did not answer within 0.01s" in result.output


async def test_the_ledger_knows_a_question_waits_and_that_asking_had_no_effect() -> None:
    runner = asker()
    seen: list[Event] = []
    stream = runner.astream(user_id="u", session_id="s", message="book")
    async for event in stream:
        if event.partial:
            continue
        seen.append(event)
        if event.type is EventType.USER_QUESTION:
            break
    await stream.aclose()
    ledger = CallLedger().observe_all(seen)
    assert ledger.awaits_answer("q1") and ledger.waits_for_person
    assert not ledger.waits_for_approval
    [open_call] = ledger.open_calls.values()
    assert ledger.never_ran(open_call)


@pytest.mark.parametrize("question", ["", "x" * 2_001])
async def test_a_question_out_of_bounds_is_an_error_the_model_reads(question: str) -> None:
    model = ScriptedModel([tool_call("ask_user", "q1", question=question), reply("ok")])
    agent = LlmAgent("booker", model=model, tools=[AskUserTool()])
    runner = Runner(agent, session_service=InMemorySessionService())
    events = [e async for e in runner.astream(user_id="u", session_id="s", message="go")]
    assert EventType.USER_QUESTION not in [e.type for e in events]
    [result] = next(e for e in events if e.type is EventType.TOOL_RESPONSE).tool_results
    assert result.is_error and result.output.startswith("tool_arguments_invalid")
