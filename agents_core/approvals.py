"""Human approval of tool calls.

A call that the agent's policy sends to a person (a rule with the ``ask`` action,
``agents_core.policies``; the tools an ``ApprovalPolicy`` names are such rules) is
announced with an ``approval_request`` event and waits, without blocking the event loop,
for a decision delivered to the ``ApprovalBroker``. A decision is bound to the call id
and to a hash of the exact arguments it approves, so a stale or forged decision cannot
approve other arguments. Approving may edit the arguments; denying, or nobody answering
before the timeout (with ``on_timeout="deny"``), gives the model a refusal as the
tool's result.

A broker that ``parks`` (a host that can resume runs from their record) lets a call
that would wait stop its run instead (``RunParked``): the run holds nothing while a
person takes their time, and the host resumes it once the call is decided, handing the
stored decision to the new run's broker before it starts (``deliver``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field

from agents_core.contracts import Contract, ToolCall
from agents_core.exceptions import AgentsCoreError

Verdict = Literal["approve", "deny"]
MAX_ANSWER_CHARS = 10_000


class ApprovalError(AgentsCoreError):
    """A decision that matches no pending request (unknown call, wrong hash, decided)."""

    code = "approval_error"


def args_hash(tool: str, args: dict[str, Any]) -> str:
    """A stable hash of a tool name and its arguments (canonical JSON, SHA-256)."""
    canonical = json.dumps({"tool": tool, "args": args}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class RunParked(Exception):
    """The turn stops here, waiting on a person for ``calls`` (their ids): raised once
    every other call of the round has its response. Not an ``AgentsCoreError``: no
    failure policy absorbs it on its way to the runner, which records ``run_parked``."""

    def __init__(self, calls: list[str]) -> None:
        super().__init__(f"waiting on a person for {', '.join(calls)}")
        self.calls = calls


class ApprovalDecision(Contract):
    """A person's verdict on a call that waits for approval."""

    kind: Literal["approval"] = "approval"
    call_id: str = Field(min_length=1)
    args_hash: str = Field(min_length=64, max_length=64)
    decision: Verdict
    edited_args: dict[str, Any] | None = None
    """Only with ``approve``: run the tool with these arguments instead."""
    reason: str = Field(default="", max_length=2_000)
    decided_by: str | None = None


class UserAnswer(Contract):
    """A person's answer to a question an agent asked them (``agents_core.tools.ask_user``),
    bound like a decision to the call id and to the hash of the question it answers."""

    kind: Literal["answer"] = "answer"
    call_id: str = Field(min_length=1)
    args_hash: str = Field(min_length=64, max_length=64)
    text: str = Field(min_length=1, max_length=MAX_ANSWER_CHARS)
    answered_by: str | None = None


Reply = ApprovalDecision | UserAnswer
"""What a person sends a run that waits on them: a decision or an answer."""
HumanReply = Annotated[Reply, Field(discriminator="kind")]
"""``Reply`` as parsed from its wire form (by its ``kind``)."""
Asks = Literal["approval", "answer"]


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """How long a person may take to decide, and what happens when nobody does.

    ``tools`` is shorthand for one ``ask`` rule per tool name
    (``agents_core.policies.approval_rules``); other calls are sent for approval by the
    agent's policy rules."""

    tools: frozenset[str] = frozenset()
    timeout_s: float = 300.0
    on_timeout: Verdict = "deny"
    per_tool: Mapping[str, tuple[float | None, Verdict | None]] = field(default_factory=dict)
    """By tool name, that tool's own time-out and outcome (``None``: the agent's)."""

    def for_call(
        self, tool: str, timeout_s: float | None = None, on_timeout: Verdict | None = None
    ) -> tuple[float, Verdict]:
        """How long a call of ``tool`` waits and what then decides it: the rule's
        (``timeout_s``, ``on_timeout``), else the tool's own, else the agent's."""
        own_s, own_outcome = self.per_tool.get(tool, (None, None))
        return (
            timeout_s or own_s or self.timeout_s,
            on_timeout or own_outcome or self.on_timeout,
        )


@dataclass(slots=True)
class PendingApproval:
    """One call waiting for a person: for a decision, or for an answer to its question
    (``asks``); made by ``ApprovalBroker.expect``."""

    args_hash: str
    session_id: str
    future: asyncio.Future[ApprovalDecision | UserAnswer]
    asks: Asks = "approval"

    async def wait(self, timeout_s: float) -> ApprovalDecision | UserAnswer | None:
        """The reply, or ``None`` when ``timeout_s`` passes first."""
        try:
            async with asyncio.timeout(timeout_s):
                return await self.future
        except TimeoutError:
            return None


@dataclass(slots=True)
class ApprovalBroker:
    """Calls of this process waiting for a person (an approval or an answer), by session
    and call id.

    Call ids come from the model (a scripted model says ``call_1`` in every run), so a
    call id alone names no call: every wait is keyed by its session and call id, and two
    sessions waiting on the same call id never see each other's decisions.
    """

    parks: bool = False
    """Whether a call that would wait may park its run instead (``RunParked``)."""
    _pending: dict[tuple[str, str], PendingApproval] = field(default_factory=dict)
    _parked: dict[tuple[str, str], str] = field(default_factory=dict)
    """Calls this process's run parked on, with their arguments' hash: a decision that
    arrives while the run stops is taken (its host keeps it) instead of refused."""
    _delivered: dict[tuple[str, str], Reply] = field(default_factory=dict)
    """Replies handed over before their call waits again (a resumed, parked run)."""

    def deliver(self, reply: Reply, *, session_id: str) -> None:
        """Hand over ``reply`` before its call waits again: the call's wait ends at once
        with it (checked as ``decide`` checks it)."""
        self._delivered[(session_id, reply.call_id)] = reply

    def park(self, call: ToolCall, *, session_id: str) -> None:
        """Note that ``call`` parked its run: a decision on it arriving meanwhile is
        taken by ``decide`` (and kept by the host), not refused."""
        self._parked[(session_id, call.id)] = args_hash(call.name, call.args)

    @contextmanager
    def expect(
        self, call: ToolCall, *, session_id: str, asks: Asks = "approval"
    ) -> Iterator[PendingApproval]:
        """Register ``call`` of ``session_id`` as waiting for ``asks``, for the duration
        of the block.

        Register before announcing the request, so a decision that arrives the moment
        the request is seen finds the call waiting.
        """
        key = (session_id, call.id)
        if key in self._pending:
            raise ApprovalError(f"call {call.id!r} is already waiting for a person")
        future: asyncio.Future[ApprovalDecision | UserAnswer] = (
            asyncio.get_running_loop().create_future()
        )
        pending = PendingApproval(args_hash(call.name, call.args), session_id, future, asks)
        self._pending[key] = pending
        early = self._delivered.pop(key, None)
        if early is not None:
            self.decide(early, session_id=session_id)
        try:
            yield pending
        finally:
            if self._pending.get(key) is pending:
                del self._pending[key]
            future.cancel()

    def decide(
        self, decision: ApprovalDecision | UserAnswer, *, session_id: str | None = None
    ) -> None:
        """Deliver a decision (or an answer) to the call of ``session_id`` it names;
        without a session, to the only call waiting under that id (refused if several
        are). A reply of the other kind than the call waits for is refused. A decision
        on a call the run parked on is taken, for its host to keep."""
        parked = self._parked.get((session_id or "", decision.call_id))
        if parked is not None and parked == decision.args_hash:
            return
        pending = self._find(decision.call_id, session_id)
        if decision.kind != pending.asks:
            wanted = "an answer to its question" if pending.asks == "answer" else "a decision"
            raise ApprovalError(f"call {decision.call_id!r} waits for {wanted}")
        if decision.args_hash != pending.args_hash:
            raise ApprovalError("the reply is for different arguments than the pending call")
        if (
            isinstance(decision, ApprovalDecision)
            and decision.decision == "deny"
            and decision.edited_args is not None
        ):
            raise ApprovalError("edited arguments go with approve, not deny")
        pending.future.set_result(decision)

    def _find(self, call_id: str, session_id: str | None) -> PendingApproval:
        waiting = [
            pending
            for (session, call), pending in self._pending.items()
            if call == call_id and session_id in (None, session) and not pending.future.done()
        ]
        if not waiting:
            raise ApprovalError(f"no call {call_id!r} is waiting for a person")
        if len(waiting) > 1:
            raise ApprovalError(f"several sessions wait on call {call_id!r}: name the session")
        return waiting[0]

    def pending_calls(self, session_id: str) -> list[str]:
        return [call for (session, call) in self._pending if session == session_id]
