"""The hooks Studio offers agent specs (``agents_core.hooks``), registered by name.

Specs come from browsers, so every setting is data, never code or a regular
expression a person writes (Python's matcher can take exponential time on a crafted
one): what ``redact`` masks are fixed patterns Studio wrote, or literal terms.

- ``redact`` masks e-mail addresses, phone numbers, card numbers and given terms in
  the model's answers (after_model), before anyone sees or stores them;
- ``tool_guard`` refuses tool calls whose arguments mention a blocked term
  (before_tool: the tool does not run, the model reads why);
- ``tool_cache`` answers a repeated tool call with the same arguments from the first
  call's result, within a run (before_tool short-circuits, after_tool remembers);
- ``fallback_reply`` answers with a fixed text when the model call fails after its
  retries (on_model_error), so the run goes on.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agents_core.context import ReadonlyContext
from agents_core.contracts import ToolCall, ToolResult
from agents_core.exceptions import ModelError
from agents_core.hooks import Hook, HookRegistry
from agents_core.llm import LlmResponse

Term = Annotated[str, Field(min_length=1, max_length=100)]
ToolName = Annotated[str, Field(min_length=1, max_length=128)]

# Every repetition is bounded, so each pattern costs a bounded amount per position.
_PATTERNS = {
    "emails": re.compile(r"\b[\w.%+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){0,6}\.[A-Za-z]{2,24}\b"),
    "phone_numbers": re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,18}\d\b"),
    "card_numbers": re.compile(r"\b\d(?:[ -]?\d){12,18}\b"),
}


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RedactSettings(_Settings):
    emails: bool = Field(default=True, title="E-mail addresses")
    phone_numbers: bool = Field(default=False, title="Phone numbers")
    card_numbers: bool = Field(default=False, title="Card numbers")
    terms: list[Term] = Field(
        default_factory=list,
        max_length=20,
        title="Terms",
        description="Words or phrases to mask, as written (any case).",
    )
    replacement: str = Field(default="[redacted]", max_length=40, title="Replacement")


class RedactHook(Hook):
    def __init__(self, settings: RedactSettings) -> None:
        chosen = [name for name in _PATTERNS if getattr(settings, name)]
        self.patterns = [_PATTERNS[name] for name in chosen]
        if settings.terms:
            self.patterns.append(
                re.compile("|".join(re.escape(term) for term in settings.terms), re.IGNORECASE)
            )
        self.replacement = settings.replacement

    def mask(self, text: str) -> str:
        for pattern in self.patterns:
            text = pattern.sub(self.replacement, text)
        return text

    async def after_model(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        thinking = self.mask(response.thinking)
        # A provider's signature signs the thinking as written: masked, it no longer does.
        signature = response.thinking_signature if thinking == response.thinking else ""
        masked = {
            "text": self.mask(response.text),
            "thinking": thinking,
            "thinking_signature": signature,
        }
        return response.model_copy(update=masked)


class ToolGuardSettings(_Settings):
    blocked_terms: list[Term] = Field(
        min_length=1,
        max_length=20,
        title="Blocked terms",
        description="A call whose arguments mention one of these (any case) does not run.",
    )
    tools: list[ToolName] = Field(
        default_factory=list,
        max_length=64,
        title="Tools",
        description="Guard only these tools (empty: every tool).",
    )


class ToolGuardHook(Hook):
    def __init__(self, settings: ToolGuardSettings) -> None:
        self.terms = [term.lower() for term in settings.blocked_terms]
        self.tools = frozenset(settings.tools)

    async def before_tool(self, ctx: ReadonlyContext, call: ToolCall) -> ToolCall | ToolResult:
        if self.tools and call.name not in self.tools:
            return call
        said = json.dumps(call.args, ensure_ascii=False).lower()
        found = next((term for term in self.terms if term in said), None)
        if found is None:
            return call
        refusal = f"blocked: the tool_guard hook refused this call: its arguments mention {found!r}"
        return ToolResult(call_id=call.id, name=call.name, output=refusal, is_error=True)


class ToolCacheSettings(_Settings):
    tools: list[ToolName] = Field(
        default_factory=list,
        max_length=64,
        title="Tools",
        description="Cache only these tools (empty: every tool).",
    )


class ToolCacheHook(Hook):
    """Remembers successful results by tool and arguments, for the agent it was built
    for: Studio builds a run's agents for that run, so the cache lasts one run."""

    MAX_ENTRIES = 256

    def __init__(self, settings: ToolCacheSettings) -> None:
        self.tools = frozenset(settings.tools)
        self.results: dict[str, ToolResult] = {}

    def _key(self, call: ToolCall) -> str | None:
        if self.tools and call.name not in self.tools:
            return None
        return json.dumps([call.name, call.args], sort_keys=True, default=str)

    async def before_tool(self, ctx: ReadonlyContext, call: ToolCall) -> ToolCall | ToolResult:
        key = self._key(call)
        cached = self.results.get(key) if key is not None else None
        return call if cached is None else cached

    async def after_tool(
        self, ctx: ReadonlyContext, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        key = self._key(call)
        if key is not None and not result.is_error and len(self.results) < self.MAX_ENTRIES:
            self.results.setdefault(key, result)
        return result


class FallbackReplySettings(_Settings):
    text: str = Field(
        min_length=1,
        max_length=2_000,
        title="Reply",
        description="What the agent answers when its model call fails after its retries.",
    )


class FallbackReplyHook(Hook):
    def __init__(self, settings: FallbackReplySettings) -> None:
        self.text = settings.text

    async def on_model_error(self, ctx: ReadonlyContext, error: ModelError) -> LlmResponse | None:
        return LlmResponse(text=self.text)


def hook_registry() -> HookRegistry:
    """Every hook a spec may name."""
    registry = HookRegistry()
    registry.register(
        "redact",
        RedactHook,
        description="Mask e-mail addresses, phone or card numbers and chosen terms in answers.",
        settings_model=RedactSettings,
    )
    registry.register(
        "tool_guard",
        ToolGuardHook,
        description="Refuse tool calls whose arguments mention a blocked term.",
        settings_model=ToolGuardSettings,
    )
    registry.register(
        "tool_cache",
        ToolCacheHook,
        description="Answer a repeated tool call from the first one's result, within a run.",
        settings_model=ToolCacheSettings,
    )
    registry.register(
        "fallback_reply",
        FallbackReplyHook,
        description="Answer with a fixed reply when the model call fails after its retries.",
        settings_model=FallbackReplySettings,
    )
    return registry
