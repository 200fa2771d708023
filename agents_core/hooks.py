"""Hooks: an ordered middleware stack around an agent's model and tool calls.

A ``Hook`` overrides any of five async methods; the others pass what they get through:

- ``before_model(ctx, request)``: return the request (rewritten or not), or an
  ``LlmResponse`` to answer in the model's place (short-circuit: the model is not called);
- ``after_model(ctx, response)``: return the response, rewritten or not;
- ``on_model_error(ctx, error)``: the model call failed after its retries; return a
  response to recover with, or ``None`` to let the error stand;
- ``before_tool(ctx, call)``: return the call (its arguments rewritten or not), or a
  ``ToolResult`` to answer in the tool's place (short-circuit);
- ``after_tool(ctx, call, result)``: return the result, rewritten or not.

An agent's hooks run in their order, each seeing what the one before returned; a
short-circuit or recovery stops the stack for that stage. Each change is noted on the
event (``Event.hooks``), so a timeline can show it. A hook that raises is isolated: its
error becomes a ``HookError``, which a tool call turns into its error result and a model
call treats as its failure (``agents_core.failures`` decides what that does).

Hooks are registered in code by name (``HookRegistry``, like tools) and specs refer to
them by that name, with settings.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from agents_core.context import ReadonlyContext
from agents_core.contracts import ToolCall, ToolResult
from agents_core.events import HookNote, HookStage
from agents_core.exceptions import HookError, ModelError
from agents_core.llm.contracts import LlmRequest, LlmResponse
from agents_core.registry import Entry, Registry


class Hook:
    """Base of every hook: each method passes its input through unchanged; override
    the ones the hook needs. ``name`` is what the timeline shows."""

    name: str = "hook"

    async def before_model(
        self, ctx: ReadonlyContext, request: LlmRequest
    ) -> LlmRequest | LlmResponse:
        return request

    async def after_model(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        return response

    async def on_model_error(self, ctx: ReadonlyContext, error: ModelError) -> LlmResponse | None:
        return None

    async def before_tool(self, ctx: ReadonlyContext, call: ToolCall) -> ToolCall | ToolResult:
        return call

    async def after_tool(
        self, ctx: ReadonlyContext, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        return result


def _overrides(hook: Hook, method: str) -> bool:
    return getattr(type(hook), method) is not getattr(Hook, method)


@dataclass(frozen=True, slots=True)
class HookStack:
    """An agent's hooks, in order. Each stage returns its outcome and appends a
    ``HookNote`` to ``notes`` for every hook that changed something."""

    hooks: tuple[Hook, ...] = ()

    @property
    def rewrites_output(self) -> bool:
        """Whether a hook may rewrite model responses: streamed tokens would show what
        it may mask, so an agent with one sends its answers whole."""
        return any(_overrides(hook, "after_model") for hook in self.hooks)

    async def before_model(
        self, ctx: ReadonlyContext, request: LlmRequest, notes: list[HookNote]
    ) -> LlmRequest | LlmResponse:
        for hook in self._with("before_model"):
            out = await _guarded(hook, "before_model", hook.before_model(ctx, request))
            if isinstance(out, LlmResponse):
                notes.append(
                    HookNote(hook=hook.name, stage="before_model", effect="short_circuited")
                )
                return out
            _note(notes, hook, "before_model", changed=out is not request and out != request)
            request = out
        return request

    async def after_model(
        self, ctx: ReadonlyContext, response: LlmResponse, notes: list[HookNote]
    ) -> LlmResponse:
        for hook in self._with("after_model"):
            out = await _guarded(hook, "after_model", hook.after_model(ctx, response))
            _note(notes, hook, "after_model", changed=out is not response and out != response)
            response = out
        return response

    async def on_model_error(
        self, ctx: ReadonlyContext, error: ModelError, notes: list[HookNote]
    ) -> LlmResponse | None:
        for hook in self._with("on_model_error"):
            out = await _guarded(hook, "on_model_error", hook.on_model_error(ctx, error))
            if out is not None:
                notes.append(HookNote(hook=hook.name, stage="on_model_error", effect="recovered"))
                return out
        return None

    async def before_tool(
        self, ctx: ReadonlyContext, call: ToolCall, notes: list[HookNote]
    ) -> ToolCall | ToolResult:
        for hook in self._with("before_tool"):
            out = await _guarded(hook, "before_tool", hook.before_tool(ctx, call))
            if isinstance(out, ToolResult):
                notes.append(
                    HookNote(hook=hook.name, stage="before_tool", effect="short_circuited")
                )
                return out.model_copy(update={"call_id": call.id, "name": call.name})
            _note(notes, hook, "before_tool", changed=out is not call and out != call)
            call = out.model_copy(update={"id": call.id})
        return call

    async def after_tool(
        self, ctx: ReadonlyContext, call: ToolCall, result: ToolResult, notes: list[HookNote]
    ) -> ToolResult:
        for hook in self._with("after_tool"):
            out = await _guarded(hook, "after_tool", hook.after_tool(ctx, call, result))
            _note(notes, hook, "after_tool", changed=out is not result and out != result)
            result = out.model_copy(update={"call_id": call.id, "name": call.name})
        return result

    def _with(self, method: str) -> Iterator[Hook]:
        return (hook for hook in self.hooks if _overrides(hook, method))


NO_HOOKS = HookStack()


async def _guarded[R](hook: Hook, stage: HookStage, pending: Awaitable[R]) -> R:
    """Await a hook's method; whatever it raises becomes a ``HookError``."""
    try:
        out: R = await pending
    except HookError:
        raise
    except Exception as exc:
        raise HookError(
            f"hook {hook.name!r} failed in {stage}: {type(exc).__name__}: {exc}",
            hook=hook.name,
            stage=stage,
        ) from exc
    return out


def _note(notes: list[HookNote], hook: Hook, stage: HookStage, *, changed: bool) -> None:
    if changed:
        notes.append(HookNote(hook=hook.name, stage=stage, effect="rewrote"))


HookFactory = Callable[[Any], Hook]
"""Builds one hook from its validated settings (``None`` without a settings model)."""


@dataclass(frozen=True, slots=True)
class HookEntry(Entry[Hook]):
    kind: ClassVar[str] = "hook"

    def create(self, raw_settings: dict[str, Any]) -> Hook:
        """A new hook (the factory must return a fresh one), named after this entry."""
        hook = self.factory(self.parse_settings(raw_settings))
        hook.name = self.name
        return hook


class HookRegistry(Registry[HookEntry]):
    """Named hook entries a spec may refer to (``{"name": ..., "settings": {...}}``)."""

    kind: ClassVar[str] = "hook"

    def register(
        self,
        name: str,
        factory: HookFactory,
        *,
        description: str,
        settings_model: type[BaseModel] | None = None,
    ) -> None:
        self.add(HookEntry(name, description, factory, settings_model))
