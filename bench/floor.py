"""The reference: the benchmark turn written directly on langchain-core, with no SDK in
between, and the zero-latency chat model both sides run on.

``ScriptedChatModel`` is a ``BaseChatModel`` that decides from the messages it gets:
it calls ``lookup_weather`` unless a tool result is the last message, then answers
(``ANSWER``, streamed as one chunk per word). Its async paths run inline (no thread
pool), ``bind_tools`` binds the tools as a real provider's model does (a
``RunnableBinding``), and it states its token usage, so neither side counts words.

The reference turn is what a user comparing runners would write: a list of messages
(a system message first), ``ainvoke`` on the model with its tools bound, run the tool,
``ainvoke`` again; the streaming form iterates ``astream`` and hands each token on.
The runner side (``adapter_model``) drives the same model through the SDK's LangChain
adapter, the path every real model takes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from agents_core.llm.langchain import LangChainModel
from bench.workload import INSTRUCTION, QUESTION, lookup_weather

ANSWER = "Sunny in Paris today."
_USAGE = UsageMetadata(input_tokens=10, output_tokens=2, total_tokens=12)

Model = Runnable[LanguageModelInput, BaseMessage]
Publish = Callable[[str], None]


class ScriptedChatModel(BaseChatModel):
    """Calls the tool, then answers ``answer`` once its result is the last message."""

    answer: str = ANSWER

    @property
    def _llm_type(self) -> str:
        return "bench-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=_decide(messages, self.answer))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        message = _decide(messages, self.answer)
        if message.tool_calls:
            chunk = AIMessageChunk(content="", tool_calls=message.tool_calls, usage_metadata=_USAGE)
            yield ChatGenerationChunk(message=chunk)
            return
        words = self.answer.split(" ")
        for index, word in enumerate(words):
            last = index == len(words) - 1
            text = word if last else f"{word} "
            usage = _USAGE if last else None
            yield ChatGenerationChunk(message=AIMessageChunk(content=text, usage_metadata=usage))

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Model:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def _decide(messages: list[BaseMessage], answer: str) -> AIMessage:
    if messages and isinstance(messages[-1], ToolMessage):
        return AIMessage(content=answer, usage_metadata=_USAGE)
    call = {"id": f"call_{len(messages)}", "name": "lookup_weather", "args": {"city": "Paris"}}
    return AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}], usage_metadata=_USAGE)


def reference_model(answer: str = ANSWER) -> Model:
    """The chat model with the tool bound, once, as a hand-written loop would."""
    return ScriptedChatModel(answer=answer).bind_tools([lookup_weather])


def adapter_model(*, streaming: bool = False, answer: str = ANSWER) -> LangChainModel:
    """The same chat model behind the SDK's LangChain adapter."""
    return LangChainModel(ScriptedChatModel(answer=answer), "bench", streaming=streaming)


def new_history() -> list[BaseMessage]:
    return [SystemMessage(INSTRUCTION)]


async def reference_turn(model: Model, history: list[BaseMessage]) -> None:
    """One turn appended to ``history``: question, tool call, tool result, answer."""
    history.append(HumanMessage(QUESTION))
    while True:
        message = await model.ainvoke(history)
        history.append(message)
        if not await _run_tools(message, history):
            return


async def reference_stream_turn(model: Model, history: list[BaseMessage], publish: Publish) -> None:
    """``reference_turn`` on ``astream``: each token is handed to ``publish`` as it
    arrives, and the chunks are summed into the message kept in the history."""
    history.append(HumanMessage(QUESTION))
    while True:
        total: BaseMessage | None = None
        async for chunk in model.astream(history):
            if isinstance(chunk.content, str) and chunk.content:
                publish(chunk.content)
            total = chunk if total is None else total + chunk  # type: ignore[operator]
        assert total is not None
        history.append(total)
        if not await _run_tools(total, history):
            return


async def _run_tools(message: BaseMessage, history: list[BaseMessage]) -> bool:
    """Run the message's tool calls into ``history``; whether there were any."""
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return False
    for call in message.tool_calls:
        output = await lookup_weather(**call["args"])
        history.append(ToolMessage(output, tool_call_id=call["id"] or "", name=call["name"]))
    return True
