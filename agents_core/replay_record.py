"""What a replay reads from a recorded turn (``agents_core.replay``).

A turn's record holds, in order, every model reply (``agent_message`` events and the
``output_invalid`` errors of answers an output schema rejected), every tool result
(``tool_response`` events, by call id) and every decision people made (``approval_decision``
and ``user_answer`` events, by call id). ``Recording.of`` indexes them; a replay plays
them back and hands each one out once.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents_core.approvals import ApprovalDecision, UserAnswer, args_hash
from agents_core.contracts import ToolCall
from agents_core.events import (
    Event,
    EventActions,
    EventType,
    ThinkingPart,
    ToolCallPart,
    ToolResponsePart,
)
from agents_core.exceptions import AgentsCoreError
from agents_core.llm.contracts import LlmResponse

__all__ = ["RecordedReply", "RecordedResult", "Recording", "ReplayError", "digest"]

OUTPUT_INVALID = "output_invalid"
_SHORT_CIRCUITS = frozenset({"short_circuited", "recovered"})


class ReplayError(AgentsCoreError):
    """A run that cannot be replayed (no such turn, or a turn with no user message)."""

    code = "replay_error"


def digest(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (keys sorted)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RecordedReply:
    """One model reply of the record: what the model answered, and what the agent had
    been told by then (the tool results its previous reply's calls got)."""

    author: str
    branch: str | None
    response: LlmResponse
    tool_results: dict[str, str] = field(default_factory=dict)
    """Call id -> result text, for the calls of this agent's previous reply: the last
    tool messages the model read before it answered."""


@dataclass(frozen=True, slots=True)
class RecordedResult:
    """One tool call's recorded response, and the arguments it may have run with."""

    name: str
    output: str
    is_error: bool
    actions: EventActions
    args: tuple[dict[str, Any], ...]
    """The model's arguments, and those an approval or a policy rewrote them to."""


@dataclass(slots=True)
class Recording:
    """A recorded turn, indexed for playing back: ``before`` are the session's events
    before it (earlier turns), ``user_event`` the message that started it."""

    before: list[Event]
    user_event: Event
    replies: dict[str, deque[RecordedReply]]
    """By agent name, in the order the agent got them."""
    results: dict[str, RecordedResult]
    decisions: dict[str, ApprovalDecision | UserAnswer | None]
    """By call id; ``None`` where nobody decided in time (the timeout's fallback)."""

    @classmethod
    def of(cls, events: Sequence[Event], invocation_id: str | None = None) -> Recording:
        """The turn ``invocation_id`` of a session's ``events`` (stored, in seq order);
        by default its last turn that a user message started."""
        stored = [e for e in events if not e.partial]
        starts = [
            i
            for i, e in enumerate(stored)
            if e.type is EventType.USER_MESSAGE
            and (invocation_id is None or e.invocation_id == invocation_id)
        ]
        if not starts:
            raise ReplayError("the run has no user message to replay from")
        start = starts[-1]
        user_event = stored[start]
        turn = [e for e in stored[start + 1 :] if e.invocation_id == user_event.invocation_id]
        recording = cls(stored[:start], user_event, {}, {}, {})
        recording._index(turn)
        return recording

    def _index(self, turn: list[Event]) -> None:
        rewritten: dict[str, list[dict[str, Any]]] = {}
        last_calls: dict[str, list[str]] = {}
        outputs: dict[str, str] = {}
        for event in turn:
            if _is_reply(event):
                calls = last_calls.get(event.author, [])
                seen = {c: outputs[c] for c in calls if c in outputs}
                reply = RecordedReply(event.author, event.branch, _response(event), seen)
                self.replies.setdefault(event.author, deque()).append(reply)
                if event.type is EventType.AGENT_MESSAGE:
                    last_calls[event.author] = [c.id for c in event.tool_calls]
            self._note_call(event, rewritten, outputs)

    def _note_call(
        self, event: Event, rewritten: dict[str, list[dict[str, Any]]], outputs: dict[str, str]
    ) -> None:
        if event.approval is not None and event.type is EventType.APPROVAL_DECISION:
            info = event.approval
            if info.edited_args is not None:
                rewritten.setdefault(info.call_id, []).append(info.edited_args)
            self.decisions[info.call_id] = (
                None
                if info.decided_by == "timeout" or info.decision is None
                else ApprovalDecision(
                    call_id=info.call_id,
                    args_hash=info.args_hash,
                    decision=info.decision,
                    edited_args=info.edited_args,
                    reason=info.reason,
                    decided_by=info.decided_by,
                )
            )
        if event.question is not None and event.type is EventType.USER_ANSWER:
            asked = event.question
            self.decisions[asked.call_id] = (
                None
                if not asked.answer
                else UserAnswer(
                    call_id=asked.call_id,
                    args_hash=asked.args_hash,
                    text=asked.answer,
                    answered_by=asked.answered_by,
                )
            )
        if event.policy is not None and event.policy.call_id and event.policy.rewritten_args:
            rewritten.setdefault(event.policy.call_id, []).append(event.policy.rewritten_args)
        for part in event.parts:
            if isinstance(part, ToolResponsePart):
                outputs[part.call_id] = part.result
                self.results[part.call_id] = RecordedResult(
                    part.name,
                    part.result,
                    part.is_error,
                    event.actions,
                    tuple(rewritten.get(part.call_id, ())),
                )
            elif isinstance(part, ToolCallPart) and event.type is EventType.AGENT_MESSAGE:
                rewritten.setdefault(part.call_id, []).insert(0, part.args)

    def result_for(self, call: ToolCall) -> RecordedResult | str:
        """The recorded result of ``call``, or why there is none to play back."""
        result = self.results.pop(call.id, None)
        if result is None:
            return f"the record has no result for call {call.id!r} to {call.name!r}"
        if result.name != call.name:
            return f"call {call.id!r} went to {call.name!r}, not {result.name!r} as recorded"
        if call.args not in result.args:
            return f"{call.name!r} was called with other arguments than recorded"
        return result

    def decision_for(self, call: ToolCall) -> tuple[bool, ApprovalDecision | UserAnswer | None]:
        """Whether the record decided ``call`` (for these arguments), and how."""
        if call.id not in self.decisions:
            return False, None
        decision = self.decisions.pop(call.id)
        if decision is not None and decision.args_hash != args_hash(call.name, call.args):
            return False, None
        return True, decision


def _is_reply(event: Event) -> bool:
    """A model reply of the record (not one a hook gave in the model's place)."""
    if any(
        n.stage in ("before_model", "on_model_error") and n.effect in _SHORT_CIRCUITS
        for n in event.hooks
    ):
        return False
    if event.type is EventType.AGENT_MESSAGE:
        return not event.cached
    return (
        event.type is EventType.ERROR
        and event.error is not None
        and event.error.code == OUTPUT_INVALID
    )


def _response(event: Event) -> LlmResponse:
    thinking = [p for p in event.parts if isinstance(p, ThinkingPart)]
    calls = event.tool_calls if event.type is EventType.AGENT_MESSAGE else []
    return LlmResponse(
        text=event.text,
        thinking="".join(p.text for p in thinking),
        thinking_signature=thinking[-1].signature if thinking else "",
        tool_calls=calls,
        model_name=event.model,
        finish_reason="tool_calls" if calls else "stop",
        replayed=True,  # played back, not spent: no usage, so nothing counts or costs it
    )
