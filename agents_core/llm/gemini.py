"""Google's Gemini API through langchain-google-genai."""

from __future__ import annotations

from typing import Any

from langchain_google_genai import ChatGoogleGenerativeAI
from pydantic import SecretStr

from agents_core.llm.http import DualTransport, default_transports
from agents_core.llm.langchain import LangChainModel


def gemini_chat(
    *,
    model: str,
    api_key: str,
    base_url: str | None = None,
    streaming: bool = True,
    timeout_s: float = 120.0,
    transport: DualTransport | None = None,
    vision: bool = True,
    **options: Any,
) -> LangChainModel:
    """A Gemini model through the Gemini Developer API (``generateContent`` and
    ``streamGenerateContent``), at Google or at ``base_url``.

    One attempt per call (``agents_core`` retries itself), no redirects followed, every
    request over ``transport`` (``agents_core.llm.http``). ``options`` go to
    ``ChatGoogleGenerativeAI`` (``temperature``, ``max_output_tokens`` ...); with a
    ``thinking_budget`` the model's thoughts come back too (``include_thoughts``), so
    they stream into the timeline like Anthropic's thinking.
    """
    if options.get("thinking_budget"):
        options.setdefault("include_thoughts", True)
    chat = ChatGoogleGenerativeAI(
        model=model,
        google_api_key=SecretStr(api_key),
        base_url=base_url,
        max_retries=1,  # the client's attempts, the first included
        timeout=timeout_s,
        client_args={"transport": transport or default_transports(), "follow_redirects": False},
        **options,
    )
    return LangChainModel(
        chat, provider=f"gemini:{base_url or 'default'}:{model}", streaming=streaming, vision=vision
    )
