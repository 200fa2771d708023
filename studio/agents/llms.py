"""Model configs to models: provider options, and building a ``BaseLlm`` for a run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError
from pydantic_core import ErrorDetails

from agents_core import exceptions as core_exceptions
from agents_core.llm import BaseLlm, LlmRequest, LlmResponse, ScriptedModel, ScriptedResponse
from agents_core.llm.chain import ModelChain
from studio import checked_http, security
from studio.agents.demo_model import demo_model
from studio.agents.providers import (
    PROVIDERS,
    MissingApiKeyError,
    ProviderUnavailableError,
    require_installed,
)
from studio.errors import Problem
from studio.models import ModelConfig


class OpenAIOptions(BaseModel):
    """What an openai-compatible config may set besides its URL, model and key.
    A closed list, so no secret (a header, a key) can hide in plaintext options."""

    model_config = ConfigDict(extra="forbid")

    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, gt=0, le=1)
    max_tokens: PositiveInt | None = None
    seed: int | None = None
    stop: list[str] | None = Field(default=None, max_length=4)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    """For reasoning models: how hard to think before answering."""
    vision: bool = False
    """The model takes images (not every model behind such an endpoint does)."""
    timeout_s: PositiveFloat = 120.0
    streaming: bool = True


class ScriptedOptions(BaseModel):
    """A fixed script, or (without one) the instruction-driven demo responder;
    ``latency_s`` before each answer and ``token_delay_s`` between its words pace it
    like a hosted model."""

    model_config = ConfigDict(extra="forbid")

    script: list[ScriptedResponse] | None = Field(default=None, max_length=1_000)
    loop: bool = True
    token_delay_s: float = Field(default=0.0, ge=0, le=1)
    latency_s: float = Field(default=0.0, ge=0, le=10)


OPTIONS_MODELS: dict[str, type[BaseModel]] = {
    ModelConfig.Provider.OPENAI_COMPATIBLE: OpenAIOptions,
    ModelConfig.Provider.SCRIPTED: ScriptedOptions,
    **{name: provider.options for name, provider in PROVIDERS.items()},
}


def accepts_attachments(config: ModelConfig) -> bool:
    """Whether ``config``'s model takes images and files: its ``vision`` option (the
    scripted model takes them, and ignores them)."""
    if config.provider == ModelConfig.Provider.SCRIPTED:
        return True
    return bool(getattr(parse_options(config.provider, config.options), "vision", False))


def parse_options(provider: str, options: dict[str, Any]) -> BaseModel:
    """Validate a config's options for its provider; pydantic's ``ValidationError`` if bad."""
    return OPTIONS_MODELS[provider].model_validate(options)


def option_problems(provider: str, options: dict[str, Any]) -> list[Problem]:
    """What is wrong with ``options`` for ``provider``, each at its option's name: an
    option the provider does not take names the ones it does."""
    try:
        parse_options(provider, options)
    except ValidationError as exc:
        return [_option_problem(provider, error) for error in exc.errors()]
    return []


def in_words(problems: list[Problem]) -> str:
    """``problems`` on one line, each at its option's name ("base_url: not an option of
    ..."). Only pydantic's messages: never the values, which may be secrets."""
    return "; ".join(f"{'.'.join(map(str, p.path)) or 'options'}: {p.message}" for p in problems)


def _option_problem(provider: str, error: ErrorDetails) -> Problem:
    path = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        label = ModelConfig.Provider(provider).label
        known = ", ".join(OPTIONS_MODELS[provider].model_fields)
        return Problem(path, "unknown_option", f"not an option of {label} models ({known})")
    return Problem(path, error["type"], error["msg"].removeprefix("Value error, "))


class ConfigProblem(NamedTuple):
    field: str
    message: str
    code: str


def config_problem(provider: str, model: str, base_url: str) -> ConfigProblem | None:
    """What is wrong with a config's provider, model or base URL, if anything. Checked
    when a config is saved, through the API or the admin."""
    if provider == ModelConfig.Provider.SCRIPTED:
        return None
    try:
        require_installed(provider)
    except ProviderUnavailableError as exc:
        return ConfigProblem("provider", exc.message, exc.code)
    if not model:
        label = ModelConfig.Provider(provider).label
        return ConfigProblem("model", f"the {label} provider needs a model name", "required")
    if base_url:
        try:
            security.check_outbound_url(base_url)
        except security.OutboundURLError as exc:
            return ConfigProblem("base_url", exc.detail, exc.code)
    return None


class OutboundRefusedError(core_exceptions.ConfigurationError):
    """A model base URL Studio must not send requests to (``studio.security``);
    ``reason`` is the check's code (``address_not_allowed``, ``unresolvable`` ...)."""

    code = "outbound_refused"

    def __init__(self, refused: security.OutboundURLError) -> None:
        super().__init__(f"base_url refused: {refused.detail}")
        self.reason = refused.code
        self.detail = refused.detail


def build_llm(config: ModelConfig, *, timeout_s: float | None = None) -> BaseLlm:
    """The model a run talks to. Decrypts the API key; the plaintext goes no further
    than the client that sends it."""
    if config.provider == ModelConfig.Provider.SCRIPTED:
        return _scripted(config, ScriptedOptions.model_validate(config.options))
    if config.provider in PROVIDERS:
        return _integration(config, timeout_s)
    return _openai(config, OpenAIOptions.model_validate(config.options), timeout_s)


def _scripted(config: ModelConfig, options: ScriptedOptions) -> BaseLlm:
    if options.script is None:
        model = demo_model(config.name, token_delay_s=options.token_delay_s)
    else:
        model = ScriptedModel(
            script=options.script,
            name=config.name,
            loop=options.loop,
            token_delay_s=options.token_delay_s,
        )
    return PacedLlm(model, options.latency_s) if options.latency_s else model


def skip_played(model: BaseLlm, steps: int) -> None:
    """Start ``model``'s script (if it plays one: the scripted provider, offline)
    ``steps`` in: an earlier execution of the same turn played them."""
    while isinstance(model, WrappedLlm | ModelChain):
        model = model.links[0].model if isinstance(model, ModelChain) else model._inner
    if isinstance(model, ScriptedModel):
        model.skip(steps)


class WrappedLlm(BaseLlm):
    """A model around another: what the runner reads of a model (its provider key, for
    breakers; its output cap, which token limits reserve) is the inner model's."""

    def __init__(self, inner: BaseLlm) -> None:
        self._inner = inner

    @property
    def provider_key(self) -> str:
        return self._inner.provider_key

    @property
    def max_output_tokens(self) -> int | None:
        return self._inner.max_output_tokens

    @property
    def accepts_attachments(self) -> bool:
        return self._inner.accepts_attachments


class PacedLlm(WrappedLlm):
    """Waits ``latency_s`` before each answer starts, as a hosted model takes a while
    to its first token: the offline demo then shows where a run's time goes."""

    def __init__(self, inner: BaseLlm, latency_s: float) -> None:
        super().__init__(inner)
        self._latency_s = latency_s

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        await asyncio.sleep(self._latency_s)
        stream = self._inner.astream(request)
        try:
            async for response in stream:
                yield response
        finally:
            await stream.aclose()


def _check_base_url(base_url: str) -> None:
    # Again at each use: the name may resolve elsewhere now, or the allowlist changed.
    try:
        security.check_outbound_url(base_url)
    except security.OutboundURLError as exc:
        raise OutboundRefusedError(exc) from None


def _openai(config: ModelConfig, options: OpenAIOptions, timeout_s: float | None) -> BaseLlm:
    if config.base_url:
        _check_base_url(config.base_url)
    extra = options.model_dump(exclude_none=True, exclude={"timeout_s", "streaming"})
    # langchain-openai takes ~2 s to import: pay it only when a config needs it, so
    # servers, workers and commands that run scripted models start fast.
    from agents_core.llm.openai import openai_compatible

    api_key = config.api_key()
    llm = openai_compatible(
        model=config.model,
        base_url=config.base_url or None,
        api_key=api_key or None,
        streaming=options.streaming,
        timeout_s=timeout_s or options.timeout_s,
        # Connections go only to addresses the outbound check admits, resolved once
        # per connection: a name cannot pass the check above and then connect elsewhere.
        **checked_http.model_clients(config.base_url or None),
        **extra,
    )
    return RedactingLlm(llm, [api_key]) if api_key else llm


def _integration(config: ModelConfig, timeout_s: float | None) -> BaseLlm:
    """An Anthropic, Gemini or Ollama model. Its integration is imported only now
    (each takes a second or two); a server without it says so instead."""
    provider = PROVIDERS[config.provider]
    options = provider.options.model_validate(config.options)
    base_url = config.base_url or provider.default_base_url
    _check_base_url(base_url)
    require_installed(config.provider)
    api_key = config.api_key()
    if provider.needs_key and not api_key:
        raise MissingApiKeyError(provider)
    try:
        llm = _BUILDERS[config.provider](
            model=config.model,
            base_url=base_url,
            api_key=api_key,
            streaming=options.streaming,
            timeout_s=timeout_s or options.timeout_s,
            **options.model_dump(exclude_none=True, exclude={"timeout_s", "streaming"}),
        )
    except ImportError as exc:  # installed, but broken (a dependency missing)
        raise ProviderUnavailableError(provider) from exc
    return RedactingLlm(llm, [api_key]) if api_key else llm


def _anthropic(*, api_key: str, **settings: Any) -> BaseLlm:
    from agents_core.llm.anthropic import anthropic_chat

    return anthropic_chat(api_key=api_key, transport=checked_http.model_transport(), **settings)


def _gemini(*, api_key: str, **settings: Any) -> BaseLlm:
    from agents_core.llm.gemini import gemini_chat

    return gemini_chat(api_key=api_key, transport=checked_http.model_transport(), **settings)


def _ollama(*, api_key: str, **settings: Any) -> BaseLlm:
    from agents_core.llm.ollama import ollama_chat

    del api_key  # Ollama takes none
    sync, async_ = checked_http.httpx_transports()
    return ollama_chat(transport=sync, async_transport=async_, **settings)


_BUILDERS: dict[str, Callable[..., BaseLlm]] = {
    ModelConfig.Provider.ANTHROPIC: _anthropic,
    ModelConfig.Provider.GEMINI: _gemini,
    ModelConfig.Provider.OLLAMA: _ollama,
}


class RedactingLlm(WrappedLlm):
    """Removes the API key from the model's errors before anything stores, logs or
    sends them: providers quote the key they were sent in 401 bodies."""

    def __init__(self, inner: BaseLlm, secrets: list[str]) -> None:
        super().__init__(inner)
        self._secrets = secrets

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        stream = self._inner.astream(request)
        try:
            async for response in stream:
                yield response
        except core_exceptions.AgentsCoreError as exc:
            exc.message = security.redact(exc.message, self._secrets)
            exc.args = (exc.message,)
            # The cause (the SDK's error) quotes the key too: drop it from tracebacks.
            raise exc from None
        finally:
            await stream.aclose()
