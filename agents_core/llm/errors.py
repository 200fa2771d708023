"""Provider errors, classified: which of the SDK's error classes a failed model call
raised, read along the error's chain of causes (``classify_error``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from langchain_core import exceptions as lc_exceptions

from agents_core.exceptions import (
    ContextOverflowError,
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
)

__all__ = ["causes", "classify_error", "status_of"]

MAX_CAUSES = 30


def classify_error(exc: Exception) -> ModelError:
    """Map a provider SDK or transport error onto the SDK's error classes.

    The first error along the chain of causes that says what happened decides: a
    LangChain-classified error (integrations raise ``langchain_core.exceptions``
    subclasses), an HTTP status, or a time-out or connection error type.
    """
    detail = f"{type(exc).__name__}: {exc}"
    for error in causes(exc):
        if (kind := _kind_of(error)) is not None:
            if issubclass(kind, ModelConnectionError | ModelTimeoutError):
                detail = _where(exc, detail)
            return kind(detail)
    return ModelError(detail)


def _where(exc: BaseException, detail: str) -> str:
    """``detail`` with where a connection failed or timed out, which the SDKs' own words
    ("Connection error.") leave out: the transport's reason at the end of the chain of
    causes and the address called (without its query or credentials, where a provider
    may carry a key)."""
    found = list(causes(exc))
    reason = next((str(e) for e in reversed(found) if isinstance(e, OSError) and str(e)), "")
    url = next((u for e in found if (u := _url_of(e))), "")
    said = "; ".join(part for part in (reason if reason not in detail else "", url) if part)
    return f"{detail} ({said})" if said else detail


def _url_of(error: BaseException) -> str:
    try:  # httpx raises when asked for the request of an error that has none
        url = getattr(getattr(error, "request", None), "url", None)
    except Exception:  # a classifier must not fail on an SDK's odd error
        return ""
    if url is None:
        return ""
    parts = urlsplit(str(url))
    if not parts.scheme or not parts.hostname:
        return ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"


_LANGCHAIN_KINDS: tuple[tuple[type[Exception], type[ModelError]], ...] = (
    (lc_exceptions.ContextOverflowError, ContextOverflowError),
    (lc_exceptions.ModelRateLimitError, ModelRateLimitError),
    (lc_exceptions.ModelTimeoutError, ModelTimeoutError),
    (lc_exceptions.ModelConnectionError, ModelConnectionError),
    (lc_exceptions.ModelAPIError, ModelServerError),
)
_CONTEXT_OVERFLOW = re.compile(
    r"context[ _-]?(?:length|window)|prompt is too long|maximum context"
    r"|exceeds the maximum number of tokens",
    re.IGNORECASE,
)
"""How providers word a request longer than the model's context (OpenAI, Anthropic,
Gemini, Ollama), for the integrations that raise it as a plain 400."""


def _kind_of(error: BaseException) -> type[ModelError] | None:
    for theirs, ours in _LANGCHAIN_KINDS:
        if isinstance(error, theirs):
            return ours
    status = status_of(error)
    name = type(error).__name__
    if isinstance(error, TimeoutError) or "Timeout" in name or status == 408:
        return ModelTimeoutError
    if status is not None:
        return _kind_of_status(status, str(error))
    if "Connection" in name or isinstance(error, ConnectionError | OSError):
        return ModelConnectionError
    return None


def _kind_of_status(status: int, text: str) -> type[ModelError] | None:
    if status == 429:
        return ModelRateLimitError
    if status >= 500:
        return ModelServerError
    if status in {400, 413} and _CONTEXT_OVERFLOW.search(text):
        return ContextOverflowError
    if 400 <= status < 500:
        return ModelRequestError
    return None


def status_of(error: BaseException) -> int | None:
    """The HTTP status an SDK error carries (``status_code``, or its response's)."""
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what caused it (``__cause__``, else ``__context__``), and so on:
    each once, at most ``MAX_CAUSES``."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < MAX_CAUSES:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__
