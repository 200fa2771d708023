"""An agent's models in order: its model, then fallbacks, and whether answers are cached.

The step loop (``agents_core._step_loop``) walks the chain itself, so each switch is
recorded as an event; ``ModelChain.astream`` walks it silently for callers without a run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from agents_core.exceptions import CircuitOpenError, ConfigurationError, Failure, failure_of
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse


@dataclass(frozen=True, slots=True)
class ModelLink:
    """One model of a chain, with its name in the builder's model registry."""

    name: str
    model: BaseLlm


def falls_back(exc: BaseException) -> bool:
    """Whether a failed call may be tried on the next model of a chain: a retryable
    failure (its retries spent) or a provider whose breaker is open."""
    return isinstance(exc, CircuitOpenError) or failure_of(exc) is Failure.RETRYABLE


class ModelChain(BaseLlm):
    """The models an agent calls, first to last; ``cache_ttl_s`` (when set) keeps
    answers that long for a run's response cache (``agents_core.model_gates``)."""

    def __init__(self, links: Sequence[ModelLink], *, cache_ttl_s: float | None = None) -> None:
        if not links:
            raise ConfigurationError("a model chain needs at least one model")
        self.links = tuple(links)
        self.cache_ttl_s = cache_ttl_s

    @property
    def provider_key(self) -> str:
        return self.links[0].model.provider_key

    @property
    def max_output_tokens(self) -> int | None:
        """The longest answer any model of the chain may give: whichever answers."""
        known = [link.model.max_output_tokens for link in self.links]
        return None if None in known else max(n for n in known if n is not None)

    @property
    def accepts_attachments(self) -> bool:
        """Whether every model of the chain takes images and files: any may answer."""
        return all(link.model.accepts_attachments for link in self.links)

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        for index, link in enumerate(self.links):
            stream = link.model.astream(request)
            try:
                async for response in stream:
                    yield response
                return
            except Exception as exc:
                if index == len(self.links) - 1 or not falls_back(exc):
                    raise
            finally:
                await stream.aclose()


def request_key(model: str, request: LlmRequest) -> str:
    """A stable hash of a whole request to ``model`` (an identity of the model and its
    options, chosen by the cache): equal requests give equal keys in any process."""
    body = {"model": model, "request": request.model_dump(mode="json")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
