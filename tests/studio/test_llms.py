"""Models built from configs (``studio.llms``): the clients of OpenAI-compatible ones."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents_core.exceptions import ModelConnectionError
from agents_core.llm import BaseLlm, ChatMessage, LlmRequest
from studio.agents.llms import build_llm
from studio.models import ModelConfig
from tests.support.openai_server import OpenAIServer


def remote(server: OpenAIServer) -> ModelConfig:
    return ModelConfig(
        name="remote", provider="openai_compatible", model="test-model", base_url=server.base_url
    )


async def answer(llm: BaseLlm) -> str:
    request = LlmRequest(messages=[ChatMessage(role="user", text="hi")])
    return [response async for response in llm.astream(request)][-1].text


# A model may be called from one event loop after another (an asyncio.run per call, as
# the runner's blocking run does), and each run builds its models anew; Studio keeps
# one pair of clients per endpoint.


def test_a_configs_model_answers_in_each_new_event_loop(openai_server: OpenAIServer) -> None:
    for i in range(3):
        openai_server.reply(f"answer {i}")

    answers = [asyncio.run(answer(build_llm(remote(openai_server)))) for _ in range(3)]

    assert answers == ["answer 0", "answer 1", "answer 2"]


async def test_the_model_calls_of_one_event_loop_share_one_connection(
    openai_server: OpenAIServer,
) -> None:
    openai_server.reply("one")
    openai_server.reply("two")
    llm = build_llm(remote(openai_server))

    assert [await answer(llm), await answer(llm)] == ["one", "two"]

    first, second = openai_server.chat_requests
    assert first.client_port == second.client_port


def test_a_new_event_loops_connections_are_checked_as_the_first_ones_were(
    openai_server: OpenAIServer, settings: Any
) -> None:
    openai_server.reply("answer 0")
    assert asyncio.run(answer(build_llm(remote(openai_server)))) == "answer 0"
    llm = build_llm(remote(openai_server))

    settings.STUDIO_OUTBOUND_ALLOWLIST = []  # narrowed after the URL was checked
    with pytest.raises(ModelConnectionError):
        asyncio.run(answer(llm))

    assert len(openai_server.chat_requests) == 1


def test_a_keyed_or_paced_model_tells_the_runner_its_output_cap() -> None:
    """Token limits reserve a model's output cap before each call: a wrapper that hid it
    would let the last call overshoot by its whole answer."""
    keyed = ModelConfig(
        name="keyed",
        provider="openai_compatible",
        model="m",
        base_url="http://127.0.0.1:9/v1",
        options={"max_tokens": 123},
    )
    keyed.set_api_key("sk-test-1234")
    assert build_llm(keyed).max_output_tokens == 123
    paced = ModelConfig(name="paced", provider="scripted", options={"latency_s": 0.1})
    paced_llm = build_llm(paced)
    assert paced_llm.max_output_tokens is None
    assert (
        paced_llm.provider_key
        == build_llm(ModelConfig(name="paced", provider="scripted")).provider_key
    )
