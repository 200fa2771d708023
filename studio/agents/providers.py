"""The model providers beyond OpenAI-compatible endpoints (Anthropic, Gemini, Ollama):
what each config may set, where its requests go by default, and which Python package
its LangChain integration comes in (a server may lack one: picking it then says so)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
)

from agents_core import exceptions as core_exceptions


class _ClientOptions(BaseModel):
    """A closed list per provider, so no secret (a header, a key) can hide in
    plaintext options."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: PositiveFloat = 120.0
    streaming: bool = True


class AnthropicOptions(_ClientOptions):
    max_tokens: PositiveInt = 1024  # the Messages API requires a cap
    temperature: float | None = Field(default=None, ge=0, le=1)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: PositiveInt | None = None
    stop_sequences: list[str] | None = Field(default=None, max_length=8)
    thinking_budget: int | None = Field(default=None, ge=1024)
    """Extended thinking: tokens the model may think in before it answers (part of
    ``max_tokens``, which must be larger)."""
    vision: bool = True
    """The model takes images and PDFs (every current Claude model does)."""

    @field_validator("thinking_budget")
    @classmethod
    def _budget_within_max_tokens(cls, budget: int | None, info: ValidationInfo) -> int | None:
        """Checked on the budget (after the fields above it), so the error names it."""
        if budget is None:
            return budget
        if budget >= info.data.get("max_tokens", budget + 1):
            raise ValueError("the thinking budget must be less than max_tokens")
        if info.data.get("temperature") is not None or info.data.get("top_k") is not None:
            raise ValueError("with a thinking budget, temperature and top_k must be unset")
        return budget


class GeminiOptions(_ClientOptions):
    max_output_tokens: PositiveInt | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: PositiveInt | None = None
    stop: list[str] | None = Field(default=None, max_length=5)
    thinking_budget: int | None = Field(default=None, ge=0)
    """Tokens the model may think in (0 turns thinking off, where the model allows)."""
    vision: bool = True


class OllamaOptions(_ClientOptions):
    num_predict: int | None = Field(default=None, ge=-2)
    num_ctx: PositiveInt | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    top_k: PositiveInt | None = None
    seed: int | None = None
    stop: list[str] | None = Field(default=None, max_length=8)
    keep_alive: str | int | None = None
    vision: bool = False
    """The model takes images (a multimodal model, such as llava or gemma3)."""


@dataclass(frozen=True, slots=True)
class Provider:
    label: str
    package: str
    """The pip name of its LangChain integration."""
    module: str
    """The integration's import name."""
    default_base_url: str
    chat_path: str
    """Where a chat request goes below the base URL, as error messages name it."""
    needs_key: bool
    options: type[_ClientOptions]


PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(
        "Anthropic",
        "langchain-anthropic",
        "langchain_anthropic",
        "https://api.anthropic.com",
        "/v1/messages",
        needs_key=True,
        options=AnthropicOptions,
    ),
    "gemini": Provider(
        "Google Gemini",
        "langchain-google-genai",
        "langchain_google_genai",
        "https://generativelanguage.googleapis.com",
        "/v1beta/models/{model}:generateContent",
        needs_key=True,
        options=GeminiOptions,
    ),
    "ollama": Provider(
        "Ollama",
        "langchain-ollama",
        "langchain_ollama",
        "http://127.0.0.1:11434",
        "/api/chat",
        needs_key=False,
        options=OllamaOptions,
    ),
}


class ProviderUnavailableError(core_exceptions.ConfigurationError):
    """A provider whose LangChain integration this server does not have installed."""

    code = "provider_unavailable"

    def __init__(self, provider: Provider) -> None:
        super().__init__(
            f"the {provider.label} provider needs the Python package {provider.package}, "
            f"which this server does not have: install it (pip install {provider.package}) "
            "and restart Studio, or pick another provider"
        )


class MissingApiKeyError(core_exceptions.ConfigurationError):
    """A config of a provider that needs a key, with none stored: nothing is sent (the
    provider's client would look for a key in this server's environment instead)."""

    code = "api_key_missing"

    def __init__(self, provider: Provider) -> None:
        super().__init__(f"the {provider.label} API needs an API key and none is stored: add one")


def require_installed(name: str) -> None:
    """Raise ``ProviderUnavailableError`` unless provider ``name``'s integration can be
    imported (it is not imported here: that takes seconds)."""
    provider = PROVIDERS.get(name)
    if provider is not None and not _importable(provider.module):
        raise ProviderUnavailableError(provider)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: blocked (None) in sys.modules
        return False
