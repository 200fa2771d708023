"""One contract every model provider passes: the real LangChain integration, through
``LangChainModel``, against an in-repo server on loopback speaking that provider's wire
format (OpenAI chat completions, Anthropic Messages, Gemini generateContent, Ollama
/api/chat). Text, tool calls, streaming, usage, and errors classified alike."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from agents_core.exceptions import (
    ContextOverflowError,
    Failure,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
    failure_of,
)
from agents_core.llm import ChatMessage, LlmRequest, LlmResponse, ToolSchema
from agents_core.llm.contracts import Attachment
from agents_core.llm.langchain import LangChainModel
from tests.support.anthropic_server import AnthropicServer
from tests.support.gemini_server import GeminiServer
from tests.support.images import png
from tests.support.ollama_server import OllamaServer
from tests.support.openai_server import OpenAIServer, TokenUsage, ToolCallReply
from tests.support.wire_server import WireServer

API_KEY = "sk-contract-key-1234"
WEATHER = ToolSchema(
    name="get_weather",
    description="Current weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
OVERFLOW = {
    "openai_compatible": "This model's maximum context length is 8192 tokens.",
    "anthropic": "prompt is too long: 210000 tokens > 200000 maximum",
    "gemini": (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    ),
    "ollama": "the input length exceeds the context length",
}


class Backend(Protocol):
    """A provider's test server, scripted the same way for every provider."""

    name: str

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: list[tuple[str, dict[str, Any]]] = ...,
        usage: tuple[int, int] = ...,
    ) -> None: ...
    def fail(self, status: int, message: str) -> None: ...
    def hang(self) -> None: ...
    def model(self, *, streaming: bool, timeout_s: float) -> LangChainModel: ...
    def sent(self) -> list[Mapping[str, Any]]: ...
    def key_sent(self) -> str | None: ...


@dataclass
class OpenAIBackend:
    server: OpenAIServer
    name: str = "openai_compatible"

    def reply(
        self, text: str = "", *, tool_calls: Any = (), usage: tuple[int, int] = (11, 5)
    ) -> None:
        calls = [ToolCallReply(n, a) for n, a in tool_calls]
        self.server.reply(text, tool_calls=calls, usage=TokenUsage(*usage))

    def fail(self, status: int, message: str) -> None:
        self.server.fail(status, message=message)

    def hang(self) -> None:
        self.server.hang()

    def model(self, *, streaming: bool, timeout_s: float) -> LangChainModel:
        from agents_core.llm.openai import openai_compatible

        return openai_compatible(
            model="test-model",
            base_url=self.server.base_url,
            api_key=API_KEY,
            streaming=streaming,
            timeout_s=timeout_s,
        )

    def sent(self) -> list[Mapping[str, Any]]:
        return [r.body for r in self.server.requests]

    def key_sent(self) -> str | None:
        return self.server.requests[-1].headers.get("authorization", "").removeprefix("Bearer ")


@dataclass
class WireBackend:
    server: WireServer
    name: str

    def reply(
        self, text: str = "", *, tool_calls: Any = (), usage: tuple[int, int] = (11, 5)
    ) -> None:
        self.server.reply(text, tool_calls=tool_calls, usage=usage)

    def fail(self, status: int, message: str) -> None:
        self.server.fail(status, message)

    def hang(self) -> None:
        self.server.hang()

    def model(self, *, streaming: bool, timeout_s: float) -> LangChainModel:
        common = {"base_url": self.server.base_url, "streaming": streaming, "timeout_s": timeout_s}
        if self.name == "anthropic":
            from agents_core.llm.anthropic import anthropic_chat

            return anthropic_chat(model="claude-test", api_key=API_KEY, max_tokens=256, **common)
        if self.name == "gemini":
            from agents_core.llm.gemini import gemini_chat

            return gemini_chat(model="gemini-test", api_key=API_KEY, **common)
        from agents_core.llm.ollama import ollama_chat

        return ollama_chat(model="llama-test", **common)

    def sent(self) -> list[Mapping[str, Any]]:
        return [r.body for r in self.server.requests]

    def key_sent(self) -> str | None:
        headers = self.server.requests[-1].headers
        bearer = headers.get("authorization", "").removeprefix("Bearer ")
        return headers.get("x-api-key") or headers.get("x-goog-api-key") or bearer or None


@pytest.fixture(params=["openai_compatible", "anthropic", "gemini", "ollama"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    servers = {"anthropic": AnthropicServer, "gemini": GeminiServer, "ollama": OllamaServer}
    if request.param == "openai_compatible":
        with OpenAIServer() as openai_server:
            yield OpenAIBackend(openai_server)
        return
    with servers[request.param]() as server:
        yield WireBackend(server, request.param)


async def _call(model: LangChainModel, tools: list[ToolSchema] | None = None) -> list[LlmResponse]:
    request = LlmRequest(
        system_instruction="Be brief.",
        messages=[ChatMessage(role="user", text="What is the weather in Paris?")],
        tools=tools or [],
    )
    return [r async for r in model.astream(request)]


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_a_text_answer_arrives_with_its_usage(backend: Backend, streaming: bool) -> None:
    backend.reply("It is sunny in Paris", usage=(21, 6))

    responses = await _call(backend.model(streaming=streaming, timeout_s=10))

    final = responses[-1]
    assert not final.partial
    assert final.text == "It is sunny in Paris"
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == (21, 6)
    assert final.tool_calls == []
    if backend.name != "ollama":  # the ollama client speaks no key
        assert backend.key_sent() == API_KEY


async def test_a_streamed_answer_arrives_token_by_token(backend: Backend) -> None:
    backend.reply("one two three four")

    responses = await _call(backend.model(streaming=True, timeout_s=10))

    deltas = [r.text for r in responses if r.partial]
    assert len(deltas) >= 4
    assert "".join(deltas) == "one two three four"


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_a_tool_call_arrives_with_its_arguments(backend: Backend, streaming: bool) -> None:
    backend.reply(tool_calls=[("get_weather", {"city": "Paris", "units": "metric"})])

    responses = await _call(backend.model(streaming=streaming, timeout_s=10), [WEATHER])

    (call,) = responses[-1].tool_calls
    assert (call.name, call.args) == ("get_weather", {"city": "Paris", "units": "metric"})
    assert call.id
    assert "get_weather" in repr(backend.sent()[-1])  # the tool's schema was sent


async def test_a_tool_result_goes_back_to_the_provider(backend: Backend) -> None:
    backend.reply("Sunny.")
    request = LlmRequest(
        messages=[
            ChatMessage(role="user", text="Weather in Paris?"),
            ChatMessage.model_validate(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}
                    ],
                }
            ),
            ChatMessage(
                role="tool", text="22 C and sunny", tool_call_id="call_1", name="get_weather"
            ),
        ],
        tools=[WEATHER],
    )

    responses = [r async for r in backend.model(streaming=True, timeout_s=10).astream(request)]

    assert responses[-1].text == "Sunny."
    assert "22 C and sunny" in repr(backend.sent()[-1])


@pytest.mark.parametrize(
    ("status", "kind", "failure"),
    [
        (429, ModelRateLimitError, Failure.RETRYABLE),
        (401, ModelRequestError, Failure.TERMINAL),
        (500, ModelServerError, Failure.RETRYABLE),
        (503, ModelServerError, Failure.RETRYABLE),
    ],
    ids=["rate-limit", "auth", "server-500", "server-503"],
)
async def test_http_errors_are_classified_alike(
    backend: Backend, status: int, kind: type[ModelError], failure: Failure
) -> None:
    backend.fail(status, "injected failure")

    with pytest.raises(kind) as raised:
        await _call(backend.model(streaming=True, timeout_s=10))

    assert type(raised.value) is kind
    assert failure_of(raised.value) is failure
    assert len(backend.sent()) == 1, "the client itself must not retry: the runner does"


async def test_a_request_longer_than_the_context_is_a_terminal_overflow(backend: Backend) -> None:
    backend.fail(400, OVERFLOW[backend.name])

    with pytest.raises(ContextOverflowError) as raised:
        await _call(backend.model(streaming=True, timeout_s=10))

    assert failure_of(raised.value) is Failure.TERMINAL


async def test_a_provider_that_does_not_answer_in_time_is_a_retryable_timeout(
    backend: Backend,
) -> None:
    backend.hang()
    model = backend.model(streaming=True, timeout_s=0.5)

    with pytest.raises(ModelTimeoutError) as raised:
        await asyncio.wait_for(_call(model), timeout=20)

    assert failure_of(raised.value) is Failure.RETRYABLE


async def test_an_attached_image_reaches_the_provider_as_an_image(backend: Backend) -> None:
    image = png()
    backend.reply("A red square.")
    model = backend.model(streaming=True, timeout_s=10)
    model.vision = True  # the OpenAI-compatible and Ollama defaults say no
    picture = Attachment(blob_id="b1", content_type="image/png", name="red.png")
    request = LlmRequest(
        messages=[ChatMessage(role="user", text="What is this?", attachments=[picture])],
        blobs={"b1": image},
    )

    responses = [r async for r in model.astream(request)]

    assert responses[-1].text == "A red square."
    sent = repr(backend.sent()[-1])
    assert base64.b64encode(image).decode() in sent
    assert "What is this?" in sent


async def test_anthropic_thinking_streams_apart_from_the_answer() -> None:
    with AnthropicServer() as server:
        server.reply("Four.", thinking="Two plus two makes four.")
        from agents_core.llm.anthropic import anthropic_chat

        model = anthropic_chat(
            model="claude-test",
            api_key=API_KEY,
            base_url=server.base_url,
            max_tokens=2048,
            thinking_budget=1024,
        )
        request = LlmRequest(messages=[ChatMessage(role="user", text="2+2?")])

        responses = [r async for r in model.astream(request)]

        sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    thought = [r.thinking for r in responses if r.partial and r.thinking]
    assert len(thought) > 1  # streamed in pieces, as it came
    assert "".join(thought) == "Two plus two makes four."
    assert all(not r.text for r in responses if r.partial and r.thinking)
    final = responses[-1]
    assert (final.text, final.thinking) == ("Four.", "Two plus two makes four.")


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_gemini_thinking_budget_is_sent_and_thoughts_come_apart_from_the_answer(
    streaming: bool,
) -> None:
    from agents_core.llm.gemini import gemini_chat

    with GeminiServer() as server:
        server.reply("Four.", thinking="Two plus two makes four.")
        model = gemini_chat(
            model="gemini-test",
            api_key=API_KEY,
            base_url=server.base_url,
            streaming=streaming,
            thinking_budget=1024,
        )

        responses = [r async for r in model.astream(LlmRequest(messages=[_ASK]))]

        sent = server.requests[-1].body
    assert sent["generationConfig"]["thinkingConfig"] == {
        "include_thoughts": True,
        "thinking_budget": 1024,
    }
    final = responses[-1]
    assert (final.text, final.thinking) == ("Four.", "Two plus two makes four.")
    assert final.usage is not None and final.usage.reasoning_tokens == 5
    if streaming:
        thought = [r.thinking for r in responses if r.partial and r.thinking]
        assert len(thought) > 1 and "".join(thought) == "Two plus two makes four."


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_openai_reasoning_effort_is_sent_and_thinking_tokens_counted_apart(
    streaming: bool,
) -> None:
    from agents_core.llm.openai import openai_compatible

    with OpenAIServer() as server:
        server.reply("Four.", usage=TokenUsage(12, 40, reasoning_tokens=33))
        model = openai_compatible(
            model="o-test",
            base_url=server.base_url,
            api_key=API_KEY,
            streaming=streaming,
            reasoning_effort="high",
        )

        responses = [r async for r in model.astream(LlmRequest(messages=[_ASK]))]

        sent = server.requests[-1]
    assert sent.body["reasoning_effort"] == "high"
    usage = responses[-1].usage
    assert usage is not None
    assert (usage.output_tokens, usage.reasoning_tokens) == (40, 33)


_ASK = ChatMessage(role="user", text="2+2?")
