"""OpenAI-compatible chat endpoints through langchain-openai."""

from __future__ import annotations

import functools
from typing import Any

import httpx2
from langchain_openai import ChatOpenAI
from openai import DefaultAsyncHttpxClient, DefaultHttpxClient
from pydantic import SecretStr

from agents_core.llm.http import PerLoopTransport
from agents_core.llm.langchain import LangChainModel

_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
"""The openai SDK's own pool limits, which a client given a transport does not apply."""


def openai_compatible(
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    streaming: bool = True,
    timeout_s: float = 120.0,
    vision: bool = False,
    **options: Any,
) -> LangChainModel:
    """A model served by any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, ...).

    Retries are off in the client: ``agents_core`` retries and counts attempts itself.
    Redirects are not followed: a caller that vetted ``base_url`` (Studio refuses private
    addresses) must not have the endpoint bounce the request, and its key, elsewhere.
    The model may be called from one event loop after another (each ``Runner.run``
    has its own): the default async client opens connections on each loop anew and
    reuses them within it. It takes no proxy from the environment; for one, pass your
    own ``http_client`` and ``http_async_client`` (which must serve one event loop only,
    or be built on ``agents_core.llm.http.PerLoopTransport``).
    ``options`` go to ``ChatOpenAI`` (``temperature``, ``max_tokens``,
    ``reasoning_effort`` ...). ``vision``: the model takes images (not every model an
    OpenAI-compatible endpoint serves does).
    """
    chat = ChatOpenAI(
        model=model,
        base_url=base_url,
        api_key=SecretStr(api_key or "not-needed"),
        max_retries=0,
        timeout=timeout_s,
        streaming=streaming,
        stream_usage=True,
        **{**_no_redirect_clients(base_url), **options},
    )
    return LangChainModel(
        chat, provider=f"openai:{base_url or 'default'}:{model}", streaming=streaming, vision=vision
    )


@functools.lru_cache(maxsize=64)
def _no_redirect_clients(base_url: str | None) -> dict[str, Any]:
    """HTTP clients that never follow redirects, one pair per endpoint (as
    langchain-openai caches its own): building one loads the CA bundle. The async one
    opens connections on each event loop anew, so a model keeps working when each call
    runs in an event loop of its own (``Runner.run``)."""
    ssl_context = httpx2.create_ssl_context()
    return {
        "http_client": DefaultHttpxClient(follow_redirects=False),
        "http_async_client": DefaultAsyncHttpxClient(
            transport=PerLoopTransport(
                lambda: httpx2.AsyncHTTPTransport(verify=ssl_context, limits=_LIMITS)
            ),
            follow_redirects=False,
        ),
    }
