"""Ollama's own chat API (``/api/chat``) through langchain-ollama."""

from __future__ import annotations

from typing import Any

import httpx
from langchain_ollama import ChatOllama

from agents_core.llm.langchain import LangChainModel

DEFAULT_BASE_URL = "http://127.0.0.1:11434"


def ollama_chat(
    *,
    model: str,
    base_url: str | None = None,
    streaming: bool = True,
    timeout_s: float = 120.0,
    transport: httpx.BaseTransport | None = None,
    async_transport: httpx.AsyncBaseTransport | None = None,
    vision: bool = False,
    **options: Any,
) -> LangChainModel:
    """A model served by Ollama, which needs no key.

    The ``ollama`` client is built on ``httpx`` (not ``httpx2``), so its transports are
    ``httpx`` ones; Studio passes transports that connect only to addresses it admits.
    Redirects are not followed and no proxy is taken from the environment. The async
    client's connections belong to the event loop of its first call: build a model
    per event loop. ``options`` go to ``ChatOllama`` (``num_ctx``, ``temperature`` ...).
    """
    base_url = base_url or DEFAULT_BASE_URL
    chat = ChatOllama(
        model=model,
        base_url=base_url,
        client_kwargs={"follow_redirects": False, "timeout": timeout_s, "trust_env": False},
        sync_client_kwargs={"transport": transport} if transport else {},
        async_client_kwargs={"transport": async_transport} if async_transport else {},
        **options,
    )
    return LangChainModel(
        chat, provider=f"ollama:{base_url}:{model}", streaming=streaming, vision=vision
    )
