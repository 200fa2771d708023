"""Anthropic's Messages API through langchain-anthropic."""

from __future__ import annotations

from functools import cached_property
from typing import Any

import anthropic
from langchain_anthropic import ChatAnthropic
from pydantic import PrivateAttr, SecretStr

from agents_core.llm.http import DualTransport, default_transports
from agents_core.llm.langchain import LangChainModel


def anthropic_chat(
    *,
    model: str,
    api_key: str,
    base_url: str | None = None,
    streaming: bool = True,
    timeout_s: float = 120.0,
    transport: DualTransport | None = None,
    thinking_budget: int | None = None,
    vision: bool = True,
    **options: Any,
) -> LangChainModel:
    """A Claude model, at Anthropic or at any server speaking its Messages API.

    Retries are off in the client (``agents_core`` retries itself) and redirects are
    not followed, so a vetted ``base_url`` cannot bounce the request and its key
    elsewhere. ``transport`` carries every request (``agents_core.llm.http``); Studio
    passes one that connects only to addresses it admits. ``options`` go to
    ``ChatAnthropic`` (``max_tokens``, ``temperature``, ``top_k`` ...).
    ``thinking_budget`` turns on extended thinking with that many tokens to think in
    (streamed as thinking); ``vision`` says the model takes images and PDFs.
    """
    if thinking_budget is not None:
        options["thinking"] = {"type": "enabled", "budget_tokens": thinking_budget}
    chat = _ChatAnthropic(
        model=model,
        base_url=base_url,
        api_key=SecretStr(api_key),
        max_retries=0,
        timeout=timeout_s,
        streaming=streaming,
        stream_usage=True,
        **options,
    )
    chat._transport = transport or default_transports()
    return LangChainModel(
        chat,
        provider=f"anthropic:{base_url or 'default'}:{model}",
        streaming=streaming,
        vision=vision,
        replays_thinking=True,
    )


class _ChatAnthropic(ChatAnthropic):
    """``ChatAnthropic`` with clients on a given transport that follow no redirect
    (the integration takes no HTTP client of its own)."""

    _transport: DualTransport = PrivateAttr()

    @cached_property
    def _client(self) -> anthropic.Client:
        http = anthropic.DefaultHttpxClient(transport=self._transport, follow_redirects=False)
        return anthropic.Client(**self._client_params, http_client=http)

    @cached_property
    def _async_client(self) -> anthropic.AsyncClient:
        http = anthropic.DefaultAsyncHttpxClient(transport=self._transport, follow_redirects=False)
        return anthropic.AsyncClient(**self._client_params, http_client=http)
