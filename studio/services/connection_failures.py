"""Why a model connection test failed, in one sentence: the address, what failed there,
and what to check. Read from the types, status codes and error numbers along the
failure's chain of causes; of the text, only a provider's own error message is quoted,
with every form of the key removed (a 401 body may quote the key it was sent)."""

from __future__ import annotations

import dataclasses
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import httpcore2

from agents_core import exceptions as core_exceptions
from agents_core.llm.errors import causes, status_of
from studio import security
from studio.agents.llms import OutboundRefusedError
from studio.agents.providers import PROVIDERS, MissingApiKeyError, ProviderUnavailableError
from studio.checked_http import RefusedConnectError
from studio.models import ModelConfig

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where the openai client sends a config without a base URL."""

_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|key|api)[-_][-_A-Za-z0-9*.]{6,}", re.IGNORECASE)
_QUOTED_CHARS = 200


@dataclass(frozen=True, slots=True)
class Endpoint:
    """What the sentences name: the base URL, its ``host:port``, the model."""

    base_url: str
    host: str
    address: str
    model: str
    has_key: bool
    kind: str = "OpenAI-compatible"
    """What the base URL must speak, as the sentences name it."""
    chat_path: str = "/chat/completions"

    @classmethod
    def of(cls, config: ModelConfig) -> Endpoint:
        provider = PROVIDERS.get(config.provider)
        default = provider.default_base_url if provider else OPENAI_BASE_URL
        base_url = (config.base_url or default).rstrip("/")
        try:
            parts = urlsplit(base_url)
            host = parts.hostname or base_url
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            host, port = base_url, 0
        shown = f"[{host}]" if ":" in host else host
        found = cls(base_url, host, f"{shown}:{port}", config.model, config.has_api_key)
        if provider is None:
            return found
        path = provider.chat_path.format(model=config.model)
        return dataclasses.replace(found, kind=provider.label, chat_path=path)


@dataclass(frozen=True, slots=True)
class Failure:
    code: str
    detail: str


Rule = Callable[[list[BaseException], Endpoint, float], Failure | None]


def explain_failure(
    error: BaseException, endpoint: Endpoint, *, timeout_s: float, secrets: list[str]
) -> Failure:
    """The first rule that recognises the failure says it; the last resort quotes the
    (redacted) error."""
    chain = list(causes(error))
    for rule in _RULES:
        if (found := rule(chain, endpoint, timeout_s)) is not None:
            return Failure(found.code, security.redact(found.detail, secrets))
    text = _quotable(str(error), secrets)
    return Failure("failed", f"The test of {endpoint.base_url} failed: {text}")


def _first[E: BaseException](chain: list[BaseException], kind: type[E]) -> E | None:
    return next((e for e in chain if isinstance(e, kind)), None)


# The rules, in the order they are tried


def _unavailable(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    missing = _first(chain, ProviderUnavailableError) or _first(chain, MissingApiKeyError)
    return None if missing is None else Failure(missing.code, f"No request was sent: {missing}.")


def _refused(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    refused = _first(chain, OutboundRefusedError) or _first(chain, RefusedConnectError)
    if refused is None:
        return None
    if refused.reason == "unresolvable":
        return Failure(
            "dns_failed",
            f"The host name {endpoint.host} does not resolve to any address: check the "
            "base URL's spelling, and that this server can reach its DNS server.",
        )
    return Failure("address_refused", f"Studio did not send the request: {refused.detail}.")


def _http_status(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    status = next((s for e in chain if isinstance(s := status_of(e), int)), None)
    if status is None:
        return None
    code, advice = _advice(status, endpoint)
    phrase = _phrase(status)
    said = _provider_message(chain)
    quoted = f" The server said: “{said}”" if said else ""
    return Failure(
        code,
        f"{endpoint.base_url}{endpoint.chat_path} answered {status}{phrase}: {advice}.{quoted}",
    )


def _timeout(chain: list[BaseException], endpoint: Endpoint, timeout_s: float) -> Failure | None:
    if _first(chain, httpcore2.ConnectTimeout) is not None:
        return Failure(
            "timeout",
            f"No connection to {endpoint.address} within {timeout_s:g} s: check the address "
            "and port, and that no firewall drops the connection.",
        )
    timed_out = _first(chain, TimeoutError) or _first(chain, core_exceptions.ModelTimeoutError)
    if timed_out is None:
        return None
    return Failure(
        "timeout",
        f"{endpoint.address} sent no answer within {timeout_s:g} s: check that the model "
        "server is running and not overloaded, and that the model is loaded (a local "
        "model's first answer can be slow; STUDIO_MODEL_TEST_TIMEOUT_S sets this limit).",
    )


def _tls(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    if (unverified := _first(chain, ssl.SSLCertVerificationError)) is not None:
        return Failure(
            "tls_failed",
            f"The TLS certificate of {endpoint.host} could not be verified "
            f"({unverified.verify_message}): check the base URL's host name, and the "
            "server's certificate.",
        )
    if (failed := _first(chain, ssl.SSLError)) is None:
        return None
    reason = failed.reason or "handshake failed"
    return Failure(
        "tls_failed",
        f"The TLS handshake with {endpoint.address} failed ({reason}): check the base "
        "URL's scheme, http:// for a server without TLS (a local one, usually), https:// "
        "otherwise.",
    )


def _connection_refused(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    if _first(chain, ConnectionRefusedError) is None:
        return None
    return Failure(
        "connection_refused",
        f"Nothing accepts connections at {endpoint.address} (connection refused): check "
        "that the model server is running and listens on that port, and the base URL's "
        "port.",
    )


def _disconnected(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    closed = _first(chain, httpcore2.RemoteProtocolError) or _first(chain, ConnectionResetError)
    if closed is None:
        return None
    return Failure(
        "disconnected",
        f"{endpoint.address} closed the connection without an answer: check that the base "
        f"URL speaks the {endpoint.kind} API, with the right scheme (http or https).",
    )


def _unreachable(chain: list[BaseException], endpoint: Endpoint, _: float) -> Failure | None:
    reason = next((e.strerror for e in chain if isinstance(e, OSError) and e.strerror), None)
    if reason is None:
        return None
    return Failure(
        "unreachable",
        f"Cannot connect to {endpoint.address} ({reason.lower()}): check the "
        "address, and that this server's network reaches it.",
    )


_RULES: list[Rule] = [
    _unavailable,
    _refused,
    _http_status,
    _timeout,
    _tls,
    _connection_refused,
    _disconnected,
    _unreachable,
]


# HTTP answers


def _advice(status: int, endpoint: Endpoint) -> tuple[str, str]:
    model = repr(endpoint.model)
    if status == 401 and not endpoint.has_key:
        return "unauthorized", "the endpoint wants an API key and none is stored: add one"
    if status == 401:
        return "unauthorized", "check the API key, which the endpoint did not accept"
    if status == 403:
        return "forbidden", f"check that the API key may use the model {model}"
    if status == 404:
        return "not_found", (
            f"check the base URL (the {endpoint.kind} API answers {endpoint.chat_path} "
            "below it; an OpenAI-compatible one usually ends in /v1) and the model name "
            f"{model}"
        )
    if status == 429:
        return "rate_limited", (
            "the key's rate limit or quota is used up: wait and try again, or check the "
            "account's plan and billing"
        )
    if status >= 500:
        return "server_error", (
            "the model server failed: try again later, or read its logs if it is yours"
        )
    return "request_refused", f"check the model name {model} and the options"


def _phrase(status: int) -> str:
    try:
        return f" {HTTPStatus(status).phrase}"
    except ValueError:
        return ""


def _provider_message(chain: list[BaseException]) -> str:
    """The error message of a provider's JSON error body, if one came back."""
    for error in chain:
        if isinstance(said := getattr(error, "error", None), str) and said.strip():
            return _quotable(said, [])  # Ollama's client: the body's "error"
        body: Any = getattr(error, "body", None) or getattr(error, "details", None)
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
            if isinstance(message, str) and message.strip():
                return _quotable(message, [])
    return ""


def _quotable(text: str, secrets: list[str]) -> str:
    """``text`` without secrets or anything shaped like a key, on one line, shortened."""
    cleaned = _KEY_LIKE.sub(security.REDACTED, security.redact(text, secrets))
    cleaned = " ".join(cleaned.split())
    if len(cleaned) > _QUOTED_CHARS:
        cleaned = cleaned[: _QUOTED_CHARS - 1].rstrip() + "…"
    return cleaned
