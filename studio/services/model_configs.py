"""Model configurations: delete one no agent uses, test its connection."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

from django.conf import settings

from agents_core import exceptions as core_exceptions
from agents_core.llm import ChatMessage, LlmRequest
from studio.agents import specs as agent_specs
from studio.agents.llms import build_llm
from studio.errors import ConflictError
from studio.models import ModelConfig


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
    detail: str
    latency_ms: float | None = None


_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|key|api)[-_][-_A-Za-z0-9*.]{6,}", re.IGNORECASE)


async def check_model_connection(config: ModelConfig) -> ConnectionCheck:
    """Send one tiny request to the config's endpoint. Never raises, never echoes the key."""
    if config.provider == ModelConfig.Provider.SCRIPTED:
        return ConnectionCheck(ok=True, detail="scripted models run offline")
    timeout = settings.MODEL_TEST_TIMEOUT_S
    request = LlmRequest(messages=[ChatMessage(role="user", text="Reply with: ok")])
    started = time.monotonic()
    try:
        llm = build_llm(config, timeout_s=timeout)
        async with asyncio.timeout(timeout):
            async for response in llm.astream(request):
                if not response.partial:
                    break
    except TimeoutError:
        return ConnectionCheck(ok=False, detail=f"no answer within {timeout:g}s")
    except core_exceptions.AgentsCoreError as exc:
        return ConnectionCheck(ok=False, detail=_scrub(f"{exc.code}: {exc.message}", config))
    except Exception as exc:  # a misconfigured client must report, not crash the view
        return ConnectionCheck(ok=False, detail=_scrub(f"{type(exc).__name__}: {exc}", config))
    elapsed = (time.monotonic() - started) * 1000
    return ConnectionCheck(ok=True, detail="the endpoint answered", latency_ms=round(elapsed, 1))


def _scrub(text: str, config: ModelConfig) -> str:
    """Provider errors sometimes quote the key they were sent; never pass that on."""
    key = config.api_key()
    if key:
        text = text.replace(key, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)[:500]
