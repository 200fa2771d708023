"""Model configurations: create one (its price from the price table when its model is
known there), delete one no agent uses, test its connection."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from agents_core.llm import ChatMessage, LlmRequest
from studio.agents import specs as agent_specs
from studio.agents.llms import build_llm
from studio.agents.prices import price_for
from studio.errors import ConflictError
from studio.models import ModelConfig
from studio.services.connection_failures import Endpoint, explain_failure

PRICE_FIELDS = ("price_input", "price_cached_input", "price_output", "price_currency")
"""A config's price: per million tokens, and their currency."""


def create_model_config(owner_id: Any, *, api_key: str = "", **fields: Any) -> ModelConfig:
    """Store a new model config. Given no price at all, it starts with the price table's
    for its provider and model (none when the table has none: its cost is unknown)."""
    config = ModelConfig(owner_id=owner_id, **fields)
    if not any(name in fields for name in PRICE_FIELDS):
        config.set_price(price_for(config.provider, config.model))
    config.set_api_key(api_key)
    config.save()
    return config


def delete_model_config(config: ModelConfig) -> None:
    """Delete a model config no agent's current spec names."""
    users = agent_specs.agents_using_model(config.owner, config.name)
    if users:
        raise ConflictError(
            f"model {config.name!r} is used by: {', '.join(users)}; change those agents first",
            code="model_in_use",
        )
    config.delete()


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    ok: bool
    code: str
    detail: str
    latency_ms: float | None = None


async def check_model_connection(config: ModelConfig) -> ConnectionCheck:
    """Send one tiny request to the config's endpoint. Never raises; a failure is said
    in words (``connection_failures``), never with the key."""
    if config.provider == ModelConfig.Provider.SCRIPTED:
        return ConnectionCheck(ok=True, code="ok", detail="scripted models run offline")
    timeout = settings.MODEL_TEST_TIMEOUT_S
    endpoint = Endpoint.of(config)
    started = time.monotonic()
    try:
        await _ask(config, limit_s=timeout)
    except Exception as exc:  # every failure is reported, none crashes the view
        failure = explain_failure(exc, endpoint, timeout_s=timeout, secrets=[config.api_key()])
        return ConnectionCheck(ok=False, code=failure.code, detail=failure.detail)
    elapsed = round((time.monotonic() - started) * 1000, 1)
    detail = f"{endpoint.address} answered as model {config.model!r}"
    return ConnectionCheck(ok=True, code="ok", detail=detail, latency_ms=elapsed)


async def _ask(config: ModelConfig, *, limit_s: float) -> None:
    request = LlmRequest(messages=[ChatMessage(role="user", text="Reply with: ok")])
    llm = build_llm(config, timeout_s=limit_s)
    async with asyncio.timeout(limit_s):
        async for response in llm.astream(request):
            if not response.partial:
                break
