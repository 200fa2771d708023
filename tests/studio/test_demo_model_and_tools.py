from __future__ import annotations

from typing import Any

import pytest

from agents_core.contracts import ToolSchema
from agents_core.exceptions import ToolArgumentsError
from agents_core.llm import ChatMessage, LlmRequest
from studio.agents.demo_model import NO_ANSWER, respond
from studio.agents.llms import PacedLlm, build_llm
from studio.agents.tools import evaluate, tool_registry
from studio.models import ModelConfig


@pytest.mark.parametrize(
    ("expression", "value"),
    [("(2 + 3) * 7", 35), ("2 ^ 10", 1024), ("7 // 2", 3), ("-1.5 * 2", -3.0), ("10 % 4", 2)],
)
def test_the_calculator_evaluates_arithmetic(expression: str, value: float) -> None:
    assert evaluate(expression) == value


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("__import__('os').system('id')", "only numbers"),
        ("1 / 0", "division by zero"),
        ("9 ** 9 ** 9", "exponents may be at most"),
        ("((9 ** 60) ** 60) ** 60", "too large"),
        ("1 +", "not an arithmetic expression"),
        ("x" * 300, "at most 200 characters"),
        ("True + 1", "only numbers"),
    ],
)
def test_the_calculator_refuses_anything_but_bounded_arithmetic(
    expression: str, problem: str
) -> None:
    with pytest.raises(ToolArgumentsError, match=problem):
        evaluate(expression)


def test_the_registry_offers_the_calculator_and_exit_loop() -> None:
    assert {"calculator", "exit_loop"} <= {entry.name for entry in tool_registry()}


def request(instruction: str, *messages: ChatMessage, tools: tuple[str, ...] = ()) -> LlmRequest:
    return LlmRequest(
        system_instruction=instruction,
        messages=list(messages),
        tools=[ToolSchema(name=name) for name in tools],
    )


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", text=text)


def test_the_demo_model_calls_a_tool_only_when_its_instruction_names_it() -> None:
    named = respond(request("Use the calculator.", user("what is 2 + 3?"), tools=("calculator",)))
    assert [(c.name, c.args) for c in named.tool_calls] == [("calculator", {"expression": "2 + 3"})]
    unnamed = respond(request("Be nice.", user("what is 2 + 3?"), tools=("calculator",)))
    assert unnamed.tool_calls == []
    assert unnamed.text == "You said: {last_user_message}"


def test_the_demo_model_reports_a_tool_result_then_follows_reply_lines() -> None:
    after = respond(request("Use the calculator.", user("2+3"), ChatMessage(role="tool", text="5")))
    assert after.text == "The result is {last_tool_result}."
    replies = "Draft: A first try.\nReply: A first try.\nReply: A better try."
    assert respond(request(replies, user("go"))).text == "A better try."
    assert respond(request("Reply: A first try.\nReply: A better try.", user("go"))).text == (
        "A first try."
    )


def test_the_demo_model_exits_a_loop_once_its_exit_word_shows_up() -> None:
    waiting = "Review: rough.\nUse exit_loop.\nExit when: polished\nReply: again"
    done = "Review: polished.\nUse exit_loop.\nExit when: polished\nReply: again"
    assert respond(request(waiting, user("x"), tools=("exit_loop",))).tool_calls == []
    assert [c.name for c in respond(request(done, user("x"), tools=("exit_loop",))).tool_calls] == [
        "exit_loop"
    ]


def test_the_demo_model_transfers_to_the_best_matching_agent() -> None:
    transfer = ToolSchema(
        name="transfer_to_agent",
        description="Transfer.\nAvailable agents:\n- math: sums and numbers\n- poet: writes poems",
        parameters={"properties": {"agent_name": {"enum": ["math", "poet"]}}},
    )
    req = LlmRequest(
        system_instruction="Route with transfer_to_agent.",
        messages=[user("please write poems about the sea")],
        tools=[transfer],
    )
    assert respond(req).tool_calls[0].args == {"agent_name": "poet"}


@pytest.mark.parametrize(
    ("refusal", "expected"),
    [
        (
            "denied: a person declined this call to 'calculator'; it did not run. "
            "Reason: not today",
            "I did not run the calculator tool, because you declined the call. "
            "You said: not today. Tell me how you would like me to go on.",
        ),
        (
            "denied: a person declined this call to 'calculator'; it did not run.",
            "I did not run the calculator tool, because you declined the call. "
            "Tell me how you would like me to go on.",
        ),
        (
            "denied by policy 'no-powers': Powers are not allowed here. The call did not run.",
            "I did not run the calculator tool: the policy no-powers refused the call "
            "(Powers are not allowed here). Tell me how you would like me to go on.",
        ),
        (
            "denied by policy 'no-powers'. The call did not run.",
            "I did not run the calculator tool: the policy no-powers refused the call. "
            "Tell me how you would like me to go on.",
        ),
    ],
)
def test_after_a_denied_call_the_demo_model_says_so_in_a_sentence(
    refusal: str, expected: str
) -> None:
    answer = respond(
        request(
            "Use the calculator.\nResult: Approved answer: {last_tool_result}",
            ChatMessage(role="user", text="what is 2 + 2"),
            ChatMessage(role="tool", text=refusal, tool_call_id="c1", name="calculator"),
        )
    )
    assert answer.text == expected


def test_the_demo_model_asks_an_agent_offered_as_a_tool_the_users_words() -> None:
    checker = ToolSchema(
        name="fact_checker",
        parameters={"type": "object", "properties": {"request": {"type": "string"}}},
    )
    asked = respond(
        LlmRequest(
            system_instruction="Have the fact_checker check it.",
            messages=[user("solar power")],
            tools=[checker],
        )
    )
    assert [(c.name, c.args) for c in asked.tool_calls] == [
        ("fact_checker", {"request": "solar power"})
    ]


ASKING = (
    "Plan a trip; ask with ask_user.\nAsk: Where from?\nResult: A trip from {last_tool_result}."
)


def test_the_demo_model_asks_the_user_once_a_message_then_uses_the_answer() -> None:
    asked = respond(request(ASKING, user("plan a trip"), tools=("ask_user",)))
    assert [(c.name, c.args) for c in asked.tool_calls] == [
        ("ask_user", {"question": "Where from?"})
    ]
    answer = ChatMessage(role="tool", text="Lyon, Friday", tool_call_id="c1", name="ask_user")
    planned = respond(request(ASKING, user("plan a trip"), answer, tools=("ask_user",)))
    assert planned.text == "A trip from {last_tool_result}."  # the runner fills it in
    said = ChatMessage(role="assistant", text="A trip from Lyon, Friday.")
    again = respond(
        request(ASKING, user("plan a trip"), answer, said, user("another"), tools=("ask_user",))
    )
    assert [c.name for c in again.tool_calls] == ["ask_user"]  # a new message, a new question
    unnamed = respond(request("Reply: Hi.\nAsk: Where from?", user("x"), tools=("ask_user",)))
    assert unnamed.tool_calls == [] and unnamed.text == "Hi."


def test_when_nobody_answers_the_demo_model_says_it_stopped() -> None:
    timed_out = ChatMessage(
        role="tool",
        text="tool_timeout: the user did not answer within 900s; go on without their answer",
        tool_call_id="c1",
        name="ask_user",
    )
    assert respond(request(ASKING, user("plan"), timed_out, tools=("ask_user",))).text == NO_ANSWER


async def test_a_paced_scripted_model_answers_as_the_unpaced_one_does() -> None:
    def answers(options: dict[str, float]) -> Any:
        config = ModelConfig(name="demo", provider=ModelConfig.Provider.SCRIPTED, options=options)
        return build_llm(config)

    paced, plain = answers({"latency_s": 0.01}), answers({})
    assert isinstance(paced, PacedLlm) and not isinstance(plain, PacedLlm)
    said = request("Reply: hello there", user("hi"))
    got = [chunk async for chunk in paced.astream(said)]
    expected = [chunk async for chunk in plain.astream(said)]
    assert [(c.text, c.partial) for c in got] == [(c.text, c.partial) for c in expected]
    assert got[-1].text == "hello there"
