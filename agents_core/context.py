"""Runtime state of one invocation, handed down the agent tree."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from agents_core.config import RunConfig
from agents_core.contracts import Usage
from agents_core.events import (
    NO_ACTIONS,
    Event,
    EventActions,
    EventType,
    Part,
    built_event,
    new_id,
)
from agents_core.exceptions import LimitExceededError
from agents_core.pausing import PauseGate

if TYPE_CHECKING:
    from agents_core.approvals import ApprovalBroker
    from agents_core.artifacts import ArtifactService
    from agents_core.blobs import BlobStore
    from agents_core.llm.resilience import BreakerRegistry
    from agents_core.memory import MemoryConfig
    from agents_core.model_gates import RateLimiter, ResponseCache
    from agents_core.resume import ResumePoint
    from agents_core.sessions.base import Session
    from agents_core.spend import SpendGuard

EventCallback = Callable[[Event], Awaitable[Event]]
"""Sends an event to the runner out of band; returns it as stored (with its seq)."""


@dataclass(slots=True)
class CancellationToken:
    """Cancels a running invocation from outside: the runner ends it with a cancelled event."""

    reason: str | None = None
    _cancelled: bool = False
    _callbacks: list[Callable[[], object]] = field(default_factory=list)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self, reason: str = "cancelled by request") -> None:
        if self._cancelled:
            return
        self._cancelled, self.reason = True, reason
        for callback in self._callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], object]) -> None:
        if self._cancelled:
            callback()
        else:
            self._callbacks.append(callback)


@dataclass(slots=True)
class InvocationBudget:
    """Counts what an invocation consumed and enforces ``RunConfig`` limits."""

    config: RunConfig
    steps: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)

    def charge_step(self) -> None:
        self.steps += 1
        _check("max_steps", self.steps, self.config.max_steps, "agent steps")

    def charge_model_call(self) -> None:
        self.model_calls += 1
        _check("max_model_calls", self.model_calls, self.config.max_model_calls, "model calls")

    def charge_tool_calls(self, count: int) -> None:
        self.tool_calls += count
        _check("max_tool_calls", self.tool_calls, self.config.max_tool_calls, "tool calls")

    def reserve_tokens(self, prompt: int, answer: int) -> None:
        """Refuse a model call that could take the invocation past ``max_tokens``: its
        prompt (estimated) and the longest answer the model may give (``answer``)."""
        limit = self.config.max_tokens
        if limit is None:
            return
        used = self.usage.total_tokens
        if used + prompt + answer > limit:
            raise LimitExceededError(
                "max_tokens",
                f"token limit of {limit} reached: {used} used, and the next model call could "
                f"take about {prompt} for its prompt and up to {answer} for its answer",
            )

    def charge_usage(self, usage: Usage | None) -> None:
        if usage is None:
            return
        self.usage = self.usage + usage
        limit = self.config.max_tokens
        if limit is not None and self.usage.total_tokens > limit:
            raise LimitExceededError(
                "max_tokens", f"token limit reached: {self.usage.total_tokens} > {limit} tokens"
            )


def _check(name: str, used: int, limit: int | None, what: str) -> None:
    if limit is not None and used > limit:
        raise LimitExceededError(name, f"limit reached: more than {limit} {what} ({name})")


@dataclass(slots=True)
class Invocation:
    """What every agent of one invocation (one user turn) shares."""

    id: str
    run_config: RunConfig
    budget: InvocationBudget
    breakers: BreakerRegistry
    event_callback: EventCallback
    post: Callable[[Event], None]
    """Hands an event to the runner without waiting for it to be stored: a partial one
    from outside an agent's generator (a model call slow to answer shows itself), or the
    record of a call cut off as the agent tree is stopped (``agents_core._step_loop``)."""
    cancel_token: CancellationToken
    approvals: ApprovalBroker
    pause_gate: PauseGate = field(default_factory=PauseGate)
    end_requested: bool = False
    transfers: int = 0
    """Agent transfers made so far in this invocation (bounded by ``max_transfers``)."""
    started_calls: set[str] = field(default_factory=set)
    """Ids of the tool calls whose tool began to run (approved, if it needed approval)."""
    resume: ResumePoint | None = None
    """Set when the invocation resumes an interrupted turn: where it picks up."""
    spend_guard: SpendGuard | None = None
    """Asked before each model call whether it may spend its worst case."""
    rate_limiter: RateLimiter | None = None
    """Waited on before each call of a named model (``agents_core.model_gates``)."""
    response_cache: ResponseCache | None = None
    """Read and filled by agents that cache their answers."""
    blobs: BlobStore | None = None
    """Where the bytes of files attached to user messages are read from."""
    memory: MemoryConfig | None = None
    """The user's long-term memory, for the memory tools (``agents_core.memory``)."""
    artifacts: ArtifactService | None = None  # the session's files (agents_core.artifacts)
    deadline: asyncio.Timeout | None = None
    """The wall-time limit the runner holds the agent tree to (expired once it struck)."""

    @property
    def stopping(self) -> bool:
        """Whether the run itself is being stopped: cancelled, or out of wall time (not a
        branch that an agent of the tree stops, as a parallel agent does its others)."""
        deadline = self.deadline
        return self.cancel_token.cancelled or (deadline is not None and deadline.expired())


@dataclass(slots=True)
class Context:
    """What an agent sees while it runs. ``for_agent`` derives a child's context;
    all contexts of an invocation share its ``Invocation``."""

    session: Session
    invocation: Invocation
    agent_name: str = ""
    branch: str | None = None
    user_input: str = ""
    """The message this agent is asked to handle: the user's, or its predecessor's output."""
    span_id: str | None = None
    """The span of this context's agent run (``None`` above the root agent)."""
    parent_span_id: str | None = None
    """The span that agent run happens in: its parent agent's, or a tool call's."""

    @property
    def state(self) -> dict[str, Any]:
        """The session state, shared across the agent tree. Persist changes through
        ``EventActions.state_delta``; direct writes are not stored."""
        return self.session.state

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def invocation_id(self) -> str:
        return self.invocation.id

    @property
    def run_config(self) -> RunConfig:
        return self.invocation.run_config

    @property
    def budget(self) -> InvocationBudget:
        return self.invocation.budget

    @property
    def breakers(self) -> BreakerRegistry:
        return self.invocation.breakers

    @property
    def event_callback(self) -> EventCallback:
        return self.invocation.event_callback

    @property
    def end_invocation(self) -> bool:
        """Set by an agent or tool to stop the whole invocation after the current step."""
        return self.invocation.end_requested

    @end_invocation.setter
    def end_invocation(self, value: bool) -> None:
        self.invocation.end_requested = value

    def for_agent(self, name: str, *, user_input: str | None = None) -> Context:
        """The context agent ``name`` runs in: same branch as its parent (a root agent's
        branch is its own name), so agents that take turns see each other's messages."""
        return dataclasses.replace(
            self,
            agent_name=name,
            branch=self.branch or name,
            user_input=self.user_input if user_input is None else user_input,
            span_id=new_id(),
            parent_span_id=self.span_id,
        )

    def within(self, span_id: str) -> Context:
        """The same context with agents it starts running inside span ``span_id`` (a
        tool call running an agent)."""
        return dataclasses.replace(self, span_id=span_id)

    def with_input(self, user_input: str) -> Context:
        """The same context with a different message to handle (a pipeline's next step)."""
        return dataclasses.replace(self, user_input=user_input)

    def for_branch(self, segment: str, *, user_input: str | None = None) -> Context:
        """A context on a new child branch ``<branch>.<segment>``: events there are hidden
        from sibling branches (parallel children, loop iterations, agent tools)."""
        return dataclasses.replace(
            self,
            branch=f"{self.branch}.{segment}" if self.branch else segment,
            user_input=self.user_input if user_input is None else user_input,
        )

    def event(
        self,
        type: EventType,
        *,
        parts: list[Part] | None = None,
        actions: EventActions | None = None,
        **fields: Any,
    ) -> Event:
        """A new event stamped with this context's session, invocation, author and
        branch, happening in this context's agent span (unless ``fields`` say otherwise)."""
        fields.setdefault("parent_span_id", self.span_id)
        return Event(
            type=type,
            invocation_id=self.invocation_id,
            session_id=self.session.id,
            author=self.agent_name,
            branch=self.branch,
            parts=parts or [],
            actions=actions or EventActions(),
            **fields,
        )

    def built_event(
        self,
        type: EventType,
        *,
        parts: list[Part] | None = None,
        actions: EventActions | None = None,
        **fields: Any,
    ) -> Event:
        """``event`` for the SDK's own hot path: every value already validated (parts
        and contracts built by the SDK), so the envelope is not validated again
        (``agents_core.events.built_event``). Agents written outside the SDK use
        ``event``."""
        fields.setdefault("parent_span_id", self.span_id)
        return built_event(
            type=type,
            invocation_id=self.invocation.id,
            session_id=self.session.id,
            author=self.agent_name,
            branch=self.branch,
            parts=parts or [],
            actions=actions or NO_ACTIONS,
            **fields,
        )

    def readonly(self) -> ReadonlyContext:
        return ReadonlyContext(self)


class ReadonlyContext:
    """A read-only view for planners and instruction providers."""

    __slots__ = ("_ctx",)

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    @property
    def state(self) -> Mapping[str, Any]:
        return MappingProxyType(self._ctx.state)

    @property
    def agent_name(self) -> str:
        return self._ctx.agent_name

    @property
    def branch(self) -> str | None:
        return self._ctx.branch

    @property
    def invocation_id(self) -> str:
        return self._ctx.invocation_id

    @property
    def session_id(self) -> str:
        return self._ctx.session.id

    @property
    def events(self) -> tuple[Event, ...]:
        return tuple(self._ctx.session.events)


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_instruction(template: str, state: Mapping[str, Any]) -> str:
    """Replace ``{key}`` with ``state[key]``; unknown keys stay as written."""
    return _PLACEHOLDER.sub(
        lambda m: str(state[m.group(1)]) if m.group(1) in state else m.group(0), template
    )
