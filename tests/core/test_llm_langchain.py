"""The LangChain adapter's conversions, against langchain-core's own fake chat model and
a chat model that cannot stream."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import (
    BaseChatModel,
    GenericFakeChatModel,
    LanguageModelInput,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field

from agents_core import ToolCall, Usage
from agents_core.exceptions import (
    ConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
)
from agents_core.llm import ChatMessage, LlmRequest, LlmResponse, ToolSchema
from agents_core.llm.langchain import (
    LangChainModel,
    classify_error,
    from_langchain_message,
    to_langchain_messages,
)

HELLO = LlmRequest(messages=[ChatMessage(role="user", text="hello")])


def fake_model(*replies: AIMessage | str, streaming: bool = True) -> LangChainModel:
    chat = GenericFakeChatModel(messages=iter(replies))
    return LangChainModel(chat, provider="fake", streaming=streaming)


async def collect(model: LangChainModel, request: LlmRequest = HELLO) -> list[LlmResponse]:
    return [response async for response in model.astream(request)]


async def test_streamed_tokens_become_partials_followed_by_the_joined_text() -> None:
    responses = await collect(fake_model("Hello big world"))

    *partials, final = responses
    assert "".join(p.text for p in partials) == "Hello big world"
    assert len(partials) > 1
    assert all(p.partial for p in partials)
    assert (final.text, final.partial) == ("Hello big world", False)


async def test_a_complete_message_carries_tool_calls_usage_and_metadata() -> None:
    message = AIMessage(
        content="Looking it up.",
        tool_calls=[{"id": "call_9", "name": "search", "args": {"q": "otters"}}],
        usage_metadata={"input_tokens": 11, "output_tokens": 4, "total_tokens": 15},
        response_metadata={"model_name": "fake-1", "finish_reason": "tool_calls"},
    )

    [response] = await collect(fake_model(message, streaming=False))

    assert response == LlmResponse(
        text="Looking it up.",
        tool_calls=[ToolCall(id="call_9", name="search", args={"q": "otters"})],
        usage=Usage(input_tokens=11, output_tokens=4),
        model_name="fake-1",
        finish_reason="tool_calls",
    )


def test_tool_calls_without_ids_get_distinct_ones() -> None:
    message = AIMessage(
        content="",
        tool_calls=[
            {"id": None, "name": "search", "args": {"q": "a"}},
            {"id": None, "name": "search", "args": {"q": "b"}},
        ],
    )

    ids = [call.id for call in from_langchain_message(message).tool_calls]

    assert len(set(ids)) == 2
    assert all(ids)


def test_thinking_is_read_from_reasoning_content() -> None:
    message = AIMessage(content="42", additional_kwargs={"reasoning_content": "6 times 7"})

    response = from_langchain_message(message)

    assert (response.text, response.thinking) == ("42", "6 times 7")


def test_content_blocks_split_into_text_and_thinking() -> None:
    message = AIMessage(
        content=[
            {"type": "thinking", "thinking": "Mull it over. "},
            {"type": "text", "text": "The answer "},
            "is 42.",
        ]
    )

    response = from_langchain_message(message)

    assert response.text == "The answer is 42."
    assert response.thinking == "Mull it over. "


def test_request_converts_to_langchain_messages_with_tool_call_ids() -> None:
    request = LlmRequest(
        system_instruction="Be brief.",
        messages=[
            ChatMessage(role="user", text="Find otters."),
            ChatMessage(
                role="assistant",
                text="Searching.",
                tool_calls=[ToolCall(id="call_1", name="search", args={"q": "otters"})],
            ),
            ChatMessage(role="tool", text="3 results", tool_call_id="call_1", name="search"),
        ],
    )

    system, user, assistant, tool = to_langchain_messages(request)

    assert system == SystemMessage("Be brief.")
    assert user == HumanMessage("Find otters.")
    assert isinstance(assistant, AIMessage)
    assert assistant.content == "Searching."
    assert [(c["id"], c["name"], c["args"]) for c in assistant.tool_calls] == [
        ("call_1", "search", {"q": "otters"})
    ]
    assert isinstance(tool, ToolMessage)
    assert (tool.content, tool.tool_call_id, tool.name) == ("3 results", "call_1", "search")


async def test_a_chat_model_without_tool_support_is_a_configuration_error() -> None:
    request = HELLO.model_copy(update={"tools": [ToolSchema(name="search")]})

    with pytest.raises(ConfigurationError, match="does not support tools"):
        await collect(fake_model("unused"), request)


class WholeAnswerChatModel(BaseChatModel):
    """A chat model that cannot stream, as many LangChain integrations: it implements
    ``_generate`` only (and takes tools), so LangChain's ``astream`` yields its whole
    answer as one ``AIMessage``. It answers with ``replies`` in turn and records the
    tools each call was given."""

    replies: list[AIMessage]
    tools_given: list[Any] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "whole-answer"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.tools_given.append(kwargs.get("tools"))
        return ChatResult(generations=[ChatGeneration(message=self.replies.pop(0))])

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=list(tools), **kwargs)


def whole_answer_model(*replies: AIMessage) -> LangChainModel:
    return LangChainModel(WholeAnswerChatModel(replies=list(replies)), provider="whole")


async def test_a_chat_model_that_cannot_stream_streams_its_answer_as_one_chunk() -> None:
    reply = AIMessage(
        "The sky is blue.", response_metadata={"model_name": "whole-1", "finish_reason": "stop"}
    )

    responses = await collect(whole_answer_model(reply))

    assert [(r.text, r.partial) for r in responses] == [
        ("The sky is blue.", True),
        ("The sky is blue.", False),
    ]
    assert (responses[-1].model_name, responses[-1].finish_reason) == ("whole-1", "stop")


async def test_a_chat_model_that_cannot_stream_streams_its_tool_calls() -> None:
    reply = AIMessage(
        "",
        tool_calls=[
            {"id": "call_1", "name": "search", "args": {"q": "otters"}},
            {"id": "call_2", "name": "search", "args": {"q": "voles", "limit": 3}},
        ],
    )
    model = whole_answer_model(reply)
    search = ToolSchema(name="search", description="Search the web.")

    responses = await collect(model, HELLO.model_copy(update={"tools": [search]}))

    [final] = responses  # no text, so no partial
    assert final.tool_calls == [
        ToolCall(id="call_1", name="search", args={"q": "otters"}),
        ToolCall(id="call_2", name="search", args={"q": "voles", "limit": 3}),
    ]
    assert isinstance(model.chat_model, WholeAnswerChatModel)
    [[given]] = model.chat_model.tools_given
    assert given["function"]["name"] == "search"


async def test_a_chat_model_that_cannot_stream_streams_its_usage() -> None:
    reply = AIMessage(
        "Fine.", usage_metadata={"input_tokens": 42, "output_tokens": 7, "total_tokens": 49}
    )

    responses = await collect(whole_answer_model(reply))

    assert responses[-1].usage == Usage(input_tokens=42, output_tokens=7)


class StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


class ProviderResponse:
    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


class ResponseError(Exception):
    """Like SDK errors that carry the HTTP response rather than a status code."""

    def __init__(self, status_code: int) -> None:
        super().__init__("provider error")
        self.response = ProviderResponse(status_code)


class ReadTimeout(Exception):
    pass


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (StatusError(429), ModelRateLimitError),
        (StatusError(500), ModelServerError),
        (ResponseError(502), ModelServerError),
        (StatusError(408), ModelTimeoutError),
        (StatusError(401), ModelRequestError),
        (ResponseError(422), ModelRequestError),
        (TimeoutError(), ModelTimeoutError),
        (ReadTimeout(), ModelTimeoutError),
        (ConnectionRefusedError(), ModelConnectionError),
        (ValueError("unexpected"), ModelError),
    ],
)
def test_provider_errors_are_classified(error: Exception, expected: type[ModelError]) -> None:
    assert type(classify_error(error)) is expected


def failing(error: Exception) -> Iterator[str]:
    raise error
    yield "unreachable"


@pytest.mark.parametrize("streaming", [True, False], ids=["stream", "invoke"])
async def test_a_chat_model_failure_is_raised_classified_and_chained(streaming: bool) -> None:
    error = StatusError(503)
    model = LangChainModel(
        GenericFakeChatModel(messages=failing(error)), provider="fake", streaming=streaming
    )

    with pytest.raises(ModelServerError) as caught:
        await collect(model)

    assert caught.value.__cause__ is error


def test_the_adapter_says_the_longest_answer_its_chat_model_may_give() -> None:
    from langchain_openai import ChatOpenAI

    from agents_core.llm.langchain import LangChainModel

    capped = ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:9/v1", max_tokens=123)  # type: ignore[arg-type]
    open_ended = ChatOpenAI(model="m", api_key="k", base_url="http://127.0.0.1:9/v1")  # type: ignore[arg-type]
    assert LangChainModel(chat_model=capped, provider="p").max_output_tokens == 123
    assert LangChainModel(chat_model=open_ended, provider="p").max_output_tokens is None
