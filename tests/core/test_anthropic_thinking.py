"""Anthropic's extended thinking on a tool-use turn: the thinking block, signed, goes
back with the tool results (the in-repo server refuses the turn otherwise, as the real
API does); a run keeps the signature in its stored thinking; other providers never get
an Anthropic block."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agents_core import InMemorySessionService, LlmAgent, function_tool
from agents_core.events import EventType, ThinkingPart
from agents_core.exceptions import ModelRequestError
from agents_core.llm import ChatMessage, LlmRequest, ToolSchema
from agents_core.llm.anthropic import anthropic_chat
from agents_core.llm.langchain import LangChainModel
from agents_core.llm.openai import openai_compatible
from agents_core.llm.resilience import BreakerRegistry
from tests.core.run_helpers import make_runner, run_turn, stored_events
from tests.support.anthropic_server import AnthropicServer, signature_of
from tests.support.openai_server import OpenAIServer

THOUGHT = "The user wants the weather: I should call the tool."
WEATHER = ToolSchema(
    name="get_weather",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


@function_tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


@pytest.fixture
def server() -> Iterator[AnthropicServer]:
    gc.collect()  # see test_model_adapter_contract: no stale client may close our socket
    with AnthropicServer() as running:
        yield running


def claude(server: AnthropicServer, *, streaming: bool) -> LangChainModel:
    return anthropic_chat(
        model="claude-test",
        api_key="sk-ant-test",
        base_url=server.base_url,
        streaming=streaming,
        max_tokens=2048,
        thinking_budget=1024,
    )


def after_the_call(thinking: str = "", signature: str = "") -> LlmRequest:
    call = {"id": "toolu_0", "name": "get_weather", "args": {"city": "Paris"}}
    assistant = {
        "role": "assistant",
        "tool_calls": [call],
        "thinking": thinking,
        "thinking_signature": signature,
    }
    return LlmRequest(
        messages=[
            ChatMessage(role="user", text="Weather in Paris?"),
            ChatMessage.model_validate(assistant),
            ChatMessage(role="tool", text="22 C", tool_call_id="toolu_0", name="get_weather"),
        ],
        tools=[WEATHER],
    )


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_a_tool_call_s_thinking_comes_back_signed_and_goes_out_again(
    server: AnthropicServer, streaming: bool
) -> None:
    server.reply("", tool_calls=[("get_weather", {"city": "Paris"})], thinking=THOUGHT)
    server.reply("Sunny.")
    model = claude(server, streaming=streaming)
    first = LlmRequest(messages=[ChatMessage(role="user", text="Weather in Paris?")])
    first = first.model_copy(update={"tools": [WEATHER]})

    [*_, called] = [r async for r in model.astream(first)]
    assert (called.thinking, called.thinking_signature) == (THOUGHT, signature_of(THOUGHT))
    request = after_the_call(called.thinking, called.thinking_signature)
    [*_, answer] = [r async for r in model.astream(request)]

    assert answer.text == "Sunny."
    [_, assistant, _] = server.requests[-1].body["messages"]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": THOUGHT,
        "signature": signature_of(THOUGHT),
    }


@pytest.mark.parametrize(
    ("thinking", "signature"), [("", ""), (THOUGHT, "sig-forged")], ids=["missing", "forged"]
)
async def test_a_tool_result_turn_without_its_signed_thinking_is_refused(
    server: AnthropicServer, thinking: str, signature: str
) -> None:
    server.reply("never sent")

    with pytest.raises(ModelRequestError, match="thinking"):
        [
            r
            async for r in claude(server, streaming=True).astream(
                after_the_call(thinking, signature)
            )
        ]


async def test_other_providers_never_get_an_anthropic_thinking_block() -> None:
    with OpenAIServer() as server:
        server.reply("Sunny.")
        model = openai_compatible(model="gpt-test", api_key="sk-test", base_url=server.base_url)

        [*_, answer] = [r async for r in model.astream(after_the_call(THOUGHT, "sig-x"))]

        sent = server.requests[-1].body
    assert answer.text == "Sunny."
    assert "sig-x" not in repr(sent) and THOUGHT not in repr(sent)


async def test_a_run_keeps_the_signature_and_its_next_call_is_accepted(
    server: AnthropicServer,
) -> None:
    server.reply("", tool_calls=[("add", {"a": 2, "b": 3})], thinking=THOUGHT)
    server.reply("It is 5.")
    agent = LlmAgent("bot", model=claude(server, streaming=True), tools=[add])
    sessions = InMemorySessionService()

    await run_turn(make_runner(agent, sessions, BreakerRegistry()), "what is 2 + 3?")

    events = await stored_events(sessions)
    messages = [e for e in events if e.type is EventType.AGENT_MESSAGE]
    assert [m.text for m in messages] == ["", "It is 5."]
    [thought] = [p for p in messages[0].parts if isinstance(p, ThinkingPart)]
    assert (thought.text, thought.signature) == (THOUGHT, signature_of(THOUGHT))
    assert len(server.requests) == 2
