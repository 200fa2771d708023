"""The stand-ins a replay puts in place of an agent tree's models, tools and people
(``agents_core.replay``): each plays the record back while the run still follows it,
and passes the call to the real thing once the run has gone live."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents_core.approvals import (
    ApprovalBroker,
    ApprovalDecision,
    Asks,
    PendingApproval,
    UserAnswer,
    args_hash,
)
from agents_core.contracts import ToolCall
from agents_core.exceptions import ToolError
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse
from agents_core.tools.base import BaseTool, ToolContext

if TYPE_CHECKING:
    from agents_core.policies import PolicyTarget
    from agents_core.replay import Replay

_TOKEN = re.compile(r"\S+\s*|\s+")
TRUNCATED = "\n[... truncated "
"""How ``agents_core.history.truncate`` marks a tool result it cut short."""


class RecordedModel(BaseLlm):
    """Answers agent ``author``'s model calls with its recorded replies, in order, while
    each request matches the record; then (and for good) its ``live`` model answers."""

    def __init__(self, author: str, live: BaseLlm, replay: Replay, *, setup: str | None) -> None:
        self.author = author
        self.live = live
        self.replay = replay
        self.setup = setup
        """Why this agent's requests cannot be the recorded ones (its instruction,
        tools, output schema or model differ from the recorded version's), or None."""

    @property
    def provider_key(self) -> str:
        return self.live.provider_key

    @property
    def max_output_tokens(self) -> int | None:
        return self.live.max_output_tokens

    @property
    def accepts_attachments(self) -> bool:
        return self.live.accepts_attachments

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        if request.purpose == "turn" and not self.replay.live:
            tape = self.replay.recording.replies.get(self.author)
            branch = tape[0].branch if tape else None
            response, why = self._recorded(request)
            if response is not None:
                for chunk in _chunks(response):
                    yield chunk
                yield response
                return
            await self.replay.diverge(why, author=self.author, branch=branch)
        async for chunk in self.live.astream(request):
            yield chunk

    def _recorded(self, request: LlmRequest) -> tuple[LlmResponse | None, str]:
        """The recorded reply to ``request``, or why it cannot be played."""
        tape = self.replay.recording.replies.get(self.author)
        if not tape:
            return None, f"the record has no further model reply for {self.author!r}"
        if self.setup is not None:
            return None, self.setup
        reply = tape.popleft()
        offered = {tool.name for tool in request.tools}
        missing = [c.name for c in reply.response.tool_calls if c.name not in offered]
        if missing:
            return None, f"{self.author!r} is no longer offered {', '.join(missing)}"
        seen = {m.tool_call_id: m.text for m in request.messages if m.role == "tool"}
        for call_id, output in reply.tool_results.items():
            if not _same_result(seen.get(call_id), output):
                return None, f"{self.author!r} was sent other tool results than recorded"
        return reply.response, ""


def _same_result(seen: str | None, output: str) -> bool:
    """Whether the model read ``output`` (cut short by the history's length limit, maybe)."""
    if seen is None:
        return False
    head, cut, _ = seen.partition(TRUNCATED)
    return output.startswith(head) if cut else seen == output


def _chunks(response: LlmResponse) -> Iterator[LlmResponse]:
    """The reply streamed as it would arrive: its thinking, then one chunk a word."""
    if response.thinking:
        yield LlmResponse(thinking=response.thinking, partial=True, model_name=response.model_name)
    for token in _TOKEN.findall(response.text):
        yield LlmResponse(text=token, partial=True, model_name=response.model_name)


class RecordedTool(BaseTool):
    """``live`` as the model sees it (name, schema, side effects), whose calls return
    their recorded results, effects included, without running it; once the replay has
    gone live, or for a call the record does not have, it runs ``live``."""

    def __init__(self, live: BaseTool, replay: Replay) -> None:
        self.live = live
        self.replay = replay
        self.name = live.name
        self.description = live.description
        self.timeout_s = live.timeout_s
        self.side_effects = live.side_effects

    def parameters_schema(self) -> dict[str, Any]:
        return self.live.parameters_schema()

    def policy_subject(self, args: Mapping[str, Any]) -> tuple[PolicyTarget, str]:
        return self.live.policy_subject(args)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        if not self.replay.live:
            call = ToolCall(id=tool_context.call.id, name=self.name, args=args)
            found = self.replay.recording.result_for(call)
            if not isinstance(found, str):
                effects, actions = tool_context.effects, found.actions
                effects.state_delta.update(actions.state_delta)
                effects.artifact_delta.update(actions.artifact_delta)
                effects.escalate = actions.escalate
                effects.transfer_to_agent = actions.transfer_to_agent
                if found.is_error:
                    raise _RecordedFailure(found.output)
                return found.output
            context = tool_context.context
            await self.replay.diverge(found, author=context.agent_name, branch=context.branch)
        return await self.live.arun(args, tool_context)


class _RecordedFailure(ToolError):
    """A recorded error result, raised again so the tool round words it the same way
    (``<code>: <message>``)."""

    def __init__(self, output: str) -> None:
        code, _, message = output.partition(": ")
        super().__init__(message if message else output)
        self.code = code if message else self.code


@dataclass(slots=True)
class _Decided(PendingApproval):
    """A wait the record already answered: it returns the recorded reply at once."""

    reply: ApprovalDecision | UserAnswer | None = None

    async def wait(self, timeout_s: float) -> ApprovalDecision | UserAnswer | None:
        return self.reply


class RecordedApprovals(ApprovalBroker):
    """Answers approvals and questions from the record's decisions while the replay
    follows it; other waits go to ``live`` (where people's decisions are delivered)."""

    def __init__(self, replay: Replay, live: ApprovalBroker) -> None:
        super().__init__()
        self.replay = replay
        self.live = live

    @contextmanager
    def expect(
        self, call: ToolCall, *, session_id: str, asks: Asks = "approval"
    ) -> Iterator[PendingApproval]:
        if not self.replay.live:
            decided, reply = self.replay.recording.decision_for(call)
            if decided:
                future = _done_future()
                yield _Decided(args_hash(call.name, call.args), session_id, future, asks, reply)
                return
        with self.live.expect(call, session_id=session_id, asks=asks) as pending:
            yield pending

    def decide(
        self, decision: ApprovalDecision | UserAnswer, *, session_id: str | None = None
    ) -> None:
        self.live.decide(decision, session_id=session_id)

    def pending_calls(self, session_id: str) -> list[str]:
        return self.live.pending_calls(session_id)


def _done_future() -> asyncio.Future[ApprovalDecision | UserAnswer]:
    future: asyncio.Future[ApprovalDecision | UserAnswer] = (
        asyncio.get_running_loop().create_future()
    )
    future.cancel()
    return future
