"""The response cache: model answers kept in the database for an agent's ``cache.ttl_s``,
keyed by a hash of the model config (everything that shapes its answers) and the whole
request (``agents_core.llm.chain.request_key``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta

from django.utils import timezone

from agents_core.llm import LlmRequest, LlmResponse
from agents_core.llm.chain import request_key
from studio.models import CachedResponse, ModelConfig


def identity(config: ModelConfig) -> str:
    """What of a config shapes its answers: a changed model, URL or option is a new key."""
    shaping = {
        "id": str(config.pk),
        "provider": config.provider,
        "base_url": config.base_url,
        "model": config.model,
        "options": config.options,
    }
    return json.dumps(shaping, sort_keys=True)


class DatabaseResponseCache:
    """The core's ``ResponseCache`` over ``CachedResponse`` rows, for ``configs`` (by name)."""

    def __init__(self, configs: Mapping[str, ModelConfig]) -> None:
        self._configs = dict(configs)

    def _key(self, model: str, request: LlmRequest) -> tuple[ModelConfig, str] | None:
        config = self._configs.get(model)
        return None if config is None else (config, request_key(identity(config), request))

    async def get(self, model: str, request: LlmRequest) -> LlmResponse | None:
        found = self._key(model, request)
        if found is None:
            return None
        rows = CachedResponse.objects.filter(key=found[1], expires_at__gt=timezone.now())
        row = await rows.afirst()
        return None if row is None else LlmResponse.model_validate(row.response)

    async def put(
        self, model: str, request: LlmRequest, response: LlmResponse, ttl_s: float
    ) -> None:
        found = self._key(model, request)
        if found is None:
            return
        config, key = found
        now = timezone.now()
        await CachedResponse.objects.filter(config=config, expires_at__lte=now).adelete()
        await CachedResponse.objects.aupdate_or_create(
            key=key,
            defaults={
                "config": config,
                "response": response.model_dump(mode="json"),
                "expires_at": now + timedelta(seconds=ttl_s),
            },
        )
