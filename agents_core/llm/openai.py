"""OpenAI-compatible chat endpoints through langchain-openai."""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from agents_core.llm.langchain import LangChainModel


def openai_compatible(
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    streaming: bool = True,
    timeout_s: float = 120.0,
    **options: Any,
) -> LangChainModel:
    """A model served by any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...).

    Retries are off in the client: ``agents_core`` retries and counts attempts itself.
    ``options`` go to ``ChatOpenAI`` (``temperature``, ``max_tokens``, ...).
    """
    chat = ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=SecretStr(api_key or "not-needed"),
        max_retries=0,
        timeout=timeout_s,
        streaming=streaming,
        stream_usage=True,
        **options,
    )
    return LangChainModel(
        chat, provider=f"openai:{base_url or 'default'}:{model}", streaming=streaming
    )
