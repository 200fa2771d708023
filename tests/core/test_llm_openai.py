"""The OpenAI-compatible provider: the real langchain-openai client over HTTP to a
scripted server on loopback."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import pytest

from agents_core import InMemorySessionService, LlmAgent, RunConfig, Runner, ToolCall, Usage
from agents_core.events import Event, EventType
from agents_core.exceptions import (
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
)
from agents_core.llm import ChatMessage, LlmRequest, LlmResponse, ToolSchema
from agents_core.llm.langchain import LangChainModel
from agents_core.llm.openai import openai_compatible
from agents_core.llm.resilience import BreakerRegistry
from tests.support.openai_server import (
    OpenAIServer,
    TokenUsage,
    ToolCallReply,
    unreachable_base_url,
)

MODEL = "test-model"
API_KEY = "sk-test-key"
WEATHER_TOOL = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


@dataclass(slots=True)
class Connect:
    """Makes models that talk to the test server, with fast loopback HTTP clients."""

    server: OpenAIServer
    http_clients: dict[str, Any]

    def __call__(self, *, streaming: bool = True, timeout_s: float = 10.0) -> LangChainModel:
        return openai_compatible(
            model=MODEL,
            base_url=self.server.base_url,
            api_key=API_KEY,
            streaming=streaming,
            timeout_s=timeout_s,
            **self.http_clients,
        )


@pytest.fixture
def connect(openai_server: OpenAIServer, loopback_http_clients: dict[str, Any]) -> Connect:
    return Connect(openai_server, loopback_http_clients)


def ask(text: str, *, tools: list[ToolSchema] | None = None) -> LlmRequest:
    return LlmRequest(messages=[ChatMessage(role="user", text=text)], tools=tools or [])


async def collect(model: LangChainModel, request: LlmRequest) -> list[LlmResponse]:
    return [response async for response in model.astream(request)]


streaming_modes = pytest.mark.parametrize("streaming", [True, False], ids=["stream", "invoke"])


async def test_streaming_yields_token_partials_then_one_complete_response(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply("The sky is blue today.")
    # The client langchain-openai builds for itself, as in production.
    model = openai_compatible(model=MODEL, base_url=openai_server.base_url, api_key=API_KEY)

    responses = await collect(model, ask("What colour is the sky?"))

    *partials, final = responses
    assert [p.text for p in partials] == ["The ", "sky ", "is ", "blue ", "today."]
    assert all(p.partial for p in partials)
    assert not final.partial
    assert final.text == "The sky is blue today."
    assert final.finish_reason == "stop"
    assert final.model_name == MODEL
    [request] = openai_server.requests
    assert request.stream
    assert request.body["stream_options"] == {"include_usage": True}


async def test_partials_arrive_while_the_server_is_still_answering(
    openai_server: OpenAIServer, connect: Connect
) -> None:
    openai_server.reply("one two three four", hold_after=2)
    stream = connect().astream(ask("Count to four."))

    async with asyncio.timeout(5):
        early = [await anext(stream), await anext(stream)]
        await asyncio.to_thread(openai_server.wait_until_held)
        openai_server.release()
        rest = [response async for response in stream]

    assert [(r.text, r.partial) for r in early] == [("one ", True), ("two ", True)]
    assert [r.text for r in rest] == ["three ", "four", "one two three four"]


async def test_non_streaming_call_yields_only_the_complete_response(
    openai_server: OpenAIServer, connect: Connect
) -> None:
    openai_server.reply("The sky is blue today.")

    responses = await collect(connect(streaming=False), ask("Sky?"))

    assert [(r.text, r.partial) for r in responses] == [("The sky is blue today.", False)]
    assert responses[0].finish_reason == "stop"
    assert not openai_server.requests[0].stream


@streaming_modes
async def test_usage_reported_by_the_server_is_recorded(
    openai_server: OpenAIServer, connect: Connect, streaming: bool
) -> None:
    openai_server.reply("Fine.", usage=TokenUsage(prompt_tokens=42, completion_tokens=7))

    responses = await collect(connect(streaming=streaming), ask("How are you?"))

    assert responses[-1].usage == Usage(input_tokens=42, output_tokens=7)


@streaming_modes
async def test_cached_prompt_tokens_reported_by_the_server_are_recorded(
    openai_server: OpenAIServer, connect: Connect, streaming: bool
) -> None:
    usage = TokenUsage(prompt_tokens=1_204, completion_tokens=88, cached_prompt_tokens=1_000)
    openai_server.reply("Fine.", usage=usage)

    responses = await collect(connect(streaming=streaming), ask("How are you?"))

    assert responses[-1].usage == Usage(
        input_tokens=1_204, output_tokens=88, cached_input_tokens=1_000
    )


@streaming_modes
async def test_a_tool_call_comes_back_with_its_id_and_parsed_arguments(
    openai_server: OpenAIServer, connect: Connect, streaming: bool
) -> None:
    call = ToolCallReply("get_weather", {"city": "Paris", "days": [1, 2]}, id="call_abc")
    openai_server.reply(tool_calls=[call])

    responses = await collect(connect(streaming=streaming), ask("Weather?", tools=[WEATHER_TOOL]))

    final = responses[-1]
    assert final.tool_calls == [
        ToolCall(id="call_abc", name="get_weather", args={"city": "Paris", "days": [1, 2]})
    ]
    assert final.finish_reason == "tool_calls"
    assert final.text == ""
    assert [p for p in responses if p.partial] == []
    [sent_tool] = openai_server.requests[0].tools
    assert sent_tool == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": WEATHER_TOOL.parameters,
        },
    }


@streaming_modes
async def test_parallel_tool_calls_keep_their_order_ids_and_arguments(
    openai_server: OpenAIServer, connect: Connect, streaming: bool
) -> None:
    openai_server.reply(
        "Checking both.",
        tool_calls=[
            ToolCallReply("get_weather", {"city": "Paris"}, id="call_1"),
            ToolCallReply("get_weather", {"city": "Lima"}, id="call_2"),
        ],
    )

    responses = await collect(connect(streaming=streaming), ask("Weather?", tools=[WEATHER_TOOL]))

    final = responses[-1]
    assert final.text == "Checking both."
    assert final.tool_calls == [
        ToolCall(id="call_1", name="get_weather", args={"city": "Paris"}),
        ToolCall(id="call_2", name="get_weather", args={"city": "Lima"}),
    ]


@streaming_modes
async def test_request_carries_instruction_tool_turns_with_ids_and_the_bearer_key(
    openai_server: OpenAIServer, connect: Connect, streaming: bool
) -> None:
    openai_server.reply("It is 18C.")
    request = LlmRequest(
        system_instruction="You report the weather.",
        messages=[
            ChatMessage(role="user", text="Weather in Paris?"),
            ChatMessage(
                role="assistant",
                text="Let me look.",
                tool_calls=[ToolCall(id="call_7", name="get_weather", args={"city": "Paris"})],
            ),
            ChatMessage(role="tool", text="18C", tool_call_id="call_7", name="get_weather"),
        ],
        tools=[WEATHER_TOOL],
    )

    await collect(connect(streaming=streaming), request)

    [received] = openai_server.requests
    assert received.path == "/v1/chat/completions"
    assert received.authorization == f"Bearer {API_KEY}"
    assert received.body["model"] == MODEL
    system, user, assistant, tool = received.messages
    assert system == {"role": "system", "content": "You report the weather."}
    assert user == {"role": "user", "content": "Weather in Paris?"}
    assert assistant["role"] == "assistant"
    assert assistant["content"] == "Let me look."
    [sent_call] = assistant["tool_calls"]
    assert sent_call["id"] == "call_7"
    assert sent_call["function"]["name"] == "get_weather"
    assert json.loads(sent_call["function"]["arguments"]) == {"city": "Paris"}
    assert tool == {"role": "tool", "content": "18C", "tool_call_id": "call_7"}


@streaming_modes
@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, ModelRateLimitError),
        (500, ModelServerError),
        (503, ModelServerError),
        (400, ModelRequestError),
        (404, ModelRequestError),
    ],
)
async def test_http_error_statuses_are_classified(
    openai_server: OpenAIServer,
    connect: Connect,
    streaming: bool,
    status: int,
    error: type[ModelError],
) -> None:
    openai_server.fail(status, message="scripted failure")

    with pytest.raises(ModelError) as caught:
        await collect(connect(streaming=streaming), ask("hi"))

    assert type(caught.value) is error
    assert "scripted failure" in caught.value.message


@streaming_modes
async def test_a_request_the_server_never_answers_times_out(
    openai_server: OpenAIServer, connect: Connect, streaming: bool
) -> None:
    openai_server.hang()

    with pytest.raises(ModelTimeoutError):
        await collect(connect(streaming=streaming, timeout_s=0.2), ask("hi"))

    # Sent once and not again. On a busy machine the client can give up before the
    # server's thread has recorded the request it sent: wait for it to arrive.
    await asyncio.to_thread(openai_server.wait_for_requests, 1)
    assert len(openai_server.requests) == 1


async def test_a_dropped_connection_is_a_connection_error(
    openai_server: OpenAIServer, connect: Connect
) -> None:
    openai_server.disconnect()

    with pytest.raises(ModelConnectionError):
        await collect(connect(), ask("hi"))


async def test_a_refused_connection_is_a_connection_error(
    loopback_http_clients: dict[str, Any],
) -> None:
    model = openai_compatible(
        model=MODEL, base_url=unreachable_base_url(), api_key=API_KEY, **loopback_http_clients
    )

    with pytest.raises(ModelConnectionError):
        await collect(model, ask("hi"))


def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city's name.
    """
    return f"18C and sunny in {city}"


async def test_a_tool_round_trip_over_http_records_usage_and_latency_on_events(
    openai_server: OpenAIServer, connect: Connect, breakers: BreakerRegistry
) -> None:
    openai_server.reply(
        tool_calls=[ToolCallReply("get_weather", {"city": "Paris"}, id="call_w1")],
        usage=TokenUsage(prompt_tokens=20, completion_tokens=5),
    )
    openai_server.reply(
        "It is 18C and sunny in Paris.", usage=TokenUsage(prompt_tokens=30, completion_tokens=9)
    )
    agent = LlmAgent(
        "assistant",
        model=connect(),
        instruction="You report the weather.",
        tools=[get_weather],
    )
    runner = Runner(
        agent, session_service=InMemorySessionService(), run_config=RunConfig(), breakers=breakers
    )

    events = [
        e async for e in runner.astream(user_id="u", session_id="s", message="Weather in Paris?")
    ]

    stored = [e for e in events if not e.partial]
    assert [e.type for e in stored] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.AGENT_MESSAGE,
        EventType.TOOL_STARTED,
        EventType.TOOL_RESPONSE,
        EventType.AGENT_MESSAGE,
        EventType.AGENT_END,
    ]
    call_message, _started, tool_response, answer = stored[2:6]
    assert call_message.tool_calls == [
        ToolCall(id="call_w1", name="get_weather", args={"city": "Paris"})
    ]
    assert call_message.usage == Usage(input_tokens=20, output_tokens=5)
    assert tool_response.tool_results[0].call_id == "call_w1"
    assert answer.text == "It is 18C and sunny in Paris."
    assert answer.usage == Usage(input_tokens=30, output_tokens=9)
    assert all(e.latency_ms is not None and e.latency_ms > 0 for e in (call_message, answer))
    assert partial_text(events) == answer.text

    first, second = openai_server.requests
    assert first.messages[0] == {"role": "system", "content": "You report the weather."}
    assert first.tools[0]["function"]["name"] == "get_weather"
    _, _, assistant, tool = second.messages
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_w1"]
    assert tool == {"role": "tool", "content": "18C and sunny in Paris", "tool_call_id": "call_w1"}


def partial_text(events: list[Event]) -> str:
    return "".join(e.text for e in events if e.partial)


# Event loops: Runner.run() and a worker's task each run in an event loop of their own,
# closed when they end; the model's HTTP clients are built once per endpoint.


async def answer(model: LangChainModel, text: str = "hi") -> str:
    return (await collect(model, ask(text)))[-1].text


def test_a_model_answers_in_each_new_event_loop(openai_server: OpenAIServer) -> None:
    for i in range(3):
        openai_server.reply(f"answer {i}")
    # One model per loop, as a worker builds a run's: all share the clients that
    # openai_compatible() keeps for the endpoint.
    models = [openai_compatible(model=MODEL, base_url=openai_server.base_url) for _ in range(3)]

    answers = [asyncio.run(answer(model)) for model in models]

    assert answers == ["answer 0", "answer 1", "answer 2"]


async def test_model_calls_in_one_event_loop_share_one_connection(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply("one")
    openai_server.reply("two")
    first_model, second_model = (
        openai_compatible(model=MODEL, base_url=openai_server.base_url) for _ in range(2)
    )

    assert [await answer(first_model), await answer(second_model)] == ["one", "two"]

    first, second = openai_server.chat_requests
    assert first.client_port == second.client_port
