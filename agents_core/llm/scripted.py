"""A model that plays a script: for offline demos and tests. No network, no LangChain."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from agents_core.contracts import Contract, ToolCall, Usage
from agents_core.exceptions import ModelError
from agents_core.llm.contracts import (
    CHARS_PER_TOKEN,
    BaseLlm,
    LlmRequest,
    LlmResponse,
    estimate_prompt_tokens,
)

REQUESTS_KEPT = 100
_TOKEN = re.compile(r"\S+\s*|\s+")


class ScriptedToolCall(Contract):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    """Defaults to a unique ``call_<n>`` id."""


class ScriptedResponse(Contract):
    """One scripted model turn.

    ``text`` may use ``{last_user_message}`` and ``{last_tool_result}``, filled in
    from the request, so a demo agent can answer with what its tool returned.
    """

    text: str = ""
    thinking: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    usage: Usage | None = None


ScriptStep = ScriptedResponse | ModelError | Callable[[LlmRequest], ScriptedResponse]


@dataclass(slots=True)
class ScriptedModel(BaseLlm):
    """Plays ``script`` in order, one step per call; a ``ModelError`` step is raised.

    Text streams as one partial chunk per word. With ``loop=True`` the script starts
    over when it runs out; otherwise running out is a terminal ``ModelError``.
    ``requests`` keeps the last ``REQUESTS_KEPT`` requests received, for assertions;
    bounded, because each request holds the whole conversation and a long-running
    demo would otherwise keep every one of them.
    """

    script: Sequence[ScriptStep]
    name: str = "scripted"
    loop: bool = False
    token_delay_s: float = 0.0
    max_answer_tokens: int | None = None
    """What the model says its longest answer may be (``max_output_tokens``)."""
    summaries: Sequence[ScriptedResponse | ModelError] = ()
    """What it answers to summary requests (compaction), in turn; without any, a digest
    of the transcript (``digest``). Summaries never play ``script``, which is the
    agent's."""
    takes_attachments: bool = True
    """Whether it says it accepts images and files (it reads none of them)."""
    _summaries_played: int = 0
    requests: list[LlmRequest] = field(default_factory=list)
    _position: int = 0
    _call_ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def provider_key(self) -> str:
        return f"scripted:{self.name}"

    @property
    def max_output_tokens(self) -> int | None:
        return self.max_answer_tokens

    @property
    def accepts_attachments(self) -> bool:
        return self.takes_attachments

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        self.requests.append(request)
        if len(self.requests) > REQUESTS_KEPT:
            del self.requests[0]
        if request.purpose == "summary":  # compaction: the script plays the agent only
            yield self._summary(request)
            return
        step = self._next_step()
        if isinstance(step, ModelError):
            raise step
        scripted = step(request) if callable(step) else step
        text = _fill(scripted.text, request)
        if scripted.thinking:
            yield LlmResponse(thinking=scripted.thinking, partial=True, model_name=self.name)
        for token in _TOKEN.findall(text):
            if self.token_delay_s:
                await asyncio.sleep(self.token_delay_s)
            yield LlmResponse(text=token, partial=True, model_name=self.name)
        yield LlmResponse(
            text=text,
            thinking=scripted.thinking,
            tool_calls=[self._call(c) for c in scripted.tool_calls],
            usage=scripted.usage or self._estimate_usage(request, text, scripted.tool_calls),
            model_name=self.name,
            finish_reason="tool_calls" if scripted.tool_calls else "stop",
        )

    def _summary(self, request: LlmRequest) -> LlmResponse:
        if not self.summaries:
            text = digest(request)
            usage = self._estimate_usage(request, text)
            return LlmResponse(text=text, usage=usage, model_name=self.name)
        step = self.summaries[min(self._summaries_played, len(self.summaries) - 1)]
        self._summaries_played += 1
        if isinstance(step, ModelError):
            raise step
        usage = step.usage or self._estimate_usage(request, step.text)
        return LlmResponse(text=step.text, usage=usage, model_name=self.name)

    def skip(self, steps: int) -> None:
        """Start ``steps`` into the script: an earlier object of the same agent played
        them in this turn (a run built again to go on: woken, or resumed)."""
        self._position = steps % len(self.script) if self.loop and self.script else steps

    def _next_step(self) -> ScriptStep:
        if self._position >= len(self.script):
            if not self.loop or not self.script:
                raise ModelError(f"scripted model {self.name!r} has no more responses")
            self._position = 0
        step = self.script[self._position]
        self._position += 1
        return step

    def _estimate_usage(
        self, request: LlmRequest, text: str, calls: Sequence[ScriptedToolCall] = ()
    ) -> Usage:
        """Rough token counts, so offline runs show plausible figures: the prompt as the
        spend guard estimates it (messages with their tool calls, the tools' schemas),
        the answer's text and the calls it makes at four characters a token."""
        written = len(text) + sum(len(call.name) + len(str(call.args)) for call in calls)
        return Usage(
            input_tokens=estimate_prompt_tokens(request), output_tokens=written // CHARS_PER_TOKEN
        )

    def _call(self, call: ScriptedToolCall) -> ToolCall:
        return ToolCall(
            id=call.id or f"call_{next(self._call_ids)}", name=call.name, args=call.args
        )


def _fill(text: str, request: LlmRequest) -> str:
    if "{" not in text:
        return text
    last_user = next((m.text for m in reversed(request.messages) if m.role == "user"), "")
    last_tool = next((m.text for m in reversed(request.messages) if m.role == "tool"), "")
    return text.replace("{last_user_message}", last_user).replace("{last_tool_result}", last_tool)


def digest(request: LlmRequest) -> str:
    """A scripted answer to a summary request, from its transcript: asked for a JSON
    array (``agents_core.memory``'s key facts), the user's last messages, a fact each;
    else (a compaction) how many messages the user sent, and the first and last."""
    transcript = "\n".join(m.text for m in request.messages)
    asked = [
        line.removeprefix("user: ") for line in transcript.splitlines() if line.startswith("user: ")
    ]
    if "JSON array" in (request.system_instruction or ""):
        return json.dumps([_clip(text, 200) for text in asked[-KEY_FACTS_KEPT:]])
    if not asked:
        return "An earlier conversation, with no messages from the user."
    first, last = _clip(asked[0]), _clip(asked[-1])
    messages = "message" if len(asked) == 1 else "messages"
    return f"Summary of {len(asked)} earlier {messages} from the user, from “{first}” to “{last}”."


KEY_FACTS_KEPT = 3
"""The user's messages a scripted key-facts answer lists."""


def _clip(text: str, chars: int = 80) -> str:
    return text if len(text) <= chars else f"{text[: chars - 1]}…"
