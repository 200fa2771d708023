"""The floor: the same turn written directly on langchain-core's fake chat model, with no
SDK in between. A list of messages, a model call, the tool, a model call.

``GenericFakeChatModel``'s async path runs ``_generate`` in a thread pool (the default
``BaseChatModel._agenerate``); ``FakeChatModel`` here calls it inline, so the floor is
LangChain's own per-call machinery and nothing else.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable

from bench.workload import QUESTION, lookup_weather


class FakeChatModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` without the thread hop, and accepting bound tools (so the
    SDK's LangChain adapter can drive it too)."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop=stop, **kwargs)

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def script() -> Iterator[AIMessage]:
    """Tool call, answer, tool call, answer, ... (the turn ``bench.workload`` scripts)."""
    for n in itertools.count(1):
        call = {"id": f"call_{n}", "name": "lookup_weather", "args": {"city": "Paris"}}
        yield AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
        yield AIMessage(content="Sunny")


def fake_chat_model(*, thread_hop: bool = False) -> GenericFakeChatModel:
    cls = GenericFakeChatModel if thread_hop else FakeChatModel
    return cls(messages=script())


async def floor_turn(model: GenericFakeChatModel, history: list[BaseMessage]) -> None:
    """One turn appended to ``history``: question, tool call, tool result, answer."""
    history.append(HumanMessage(QUESTION))
    while True:
        message = await model.ainvoke(history)
        history.append(message)
        if not isinstance(message, AIMessage) or not message.tool_calls:
            return
        for call in message.tool_calls:
            output = await lookup_weather(**call["args"])
            history.append(ToolMessage(output, tool_call_id=call["id"] or "", name=call["name"]))
