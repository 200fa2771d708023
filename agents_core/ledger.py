"""The ledger of a turn's open calls: what it asked for and has not got yet.

``CallLedger`` follows stored events in seq order and knows which tool calls have no
response yet, which calls wait for (or got) a person's approval or answer, and which
model calls wait for their model's rate limit. The runner uses it to answer every call
a turn leaves open when it ends early (cancelled, or failed while tools ran), so that
each call in the record has exactly one response (and each wait its end); Studio uses
it for what a live run waits on, for crash recovery and for approval decisions.

A tool's error result reads ``"<code>: <message>"``. The codes of the results that close
calls which did not finish are ``NOT_RUN`` (certainly did not run), ``CANCELLED`` and
``IN_DOUBT`` (may or may not have taken effect); ``DENIED`` is a person's refusal.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Literal

from agents_core.events import (
    ErrorInfo,
    Event,
    EventType,
    TextPart,
    ToolCallPart,
    ToolResponsePart,
    new_id,
    utc_now,
)

DENIED = "denied"
NOT_RUN = "not_run"
CANCELLED = "cancelled"
IN_DOUBT = "in_doubt"

TRACKED_TYPES: frozenset[EventType] = frozenset(
    {
        EventType.AGENT_MESSAGE,
        EventType.TOOL_RESPONSE,
        EventType.APPROVAL_REQUEST,
        EventType.APPROVAL_DECISION,
        EventType.USER_QUESTION,
        EventType.USER_ANSWER,
        EventType.TOOL_STARTED,
        EventType.RATE_LIMIT_WAITING,
        EventType.RATE_LIMIT_WAIT,
        EventType.MODEL_RETRY,
        EventType.MODEL_FALLBACK,
        EventType.ERROR,
    }
)
"""The event types that open or close a call (a model call's retries and what ends them
among them)."""


def error_code(result: str) -> str:
    """The code an error result starts with (``"denied: ..."`` -> ``"denied"``)."""
    code, colon, _ = result.partition(":")
    return code.strip() if colon and code.strip().isidentifier() else "error"


@dataclass(frozen=True, slots=True)
class OpenCall:
    """A tool call the model made that has no response yet, and where it was made."""

    call_id: str
    name: str
    invocation_id: str
    author: str
    branch: str | None
    span_id: str | None = None
    parent_span_id: str | None = None


@dataclass(slots=True)
class CallLedger:
    """Calls, built by ``observe``-ing stored events in seq order."""

    open_calls: dict[str, OpenCall] = field(default_factory=dict)
    """Tool calls without a response, in the order they were made."""
    approvals: dict[str, Literal["approve", "deny"] | None] = field(default_factory=dict)
    """Each call that asked for approval: its verdict, ``None`` while it waits."""
    questions: dict[str, bool] = field(default_factory=dict)
    """Each call that asked the user a question: whether it has had its answer (or its
    time-out)."""
    started: set[str] = field(default_factory=set)
    """The calls the effect journal says started (their ``tool_started`` events): the
    calls of tools with side effects that may have taken effect."""
    open_waits: dict[str, Event] = field(default_factory=dict)
    """Waits for a model's rate limit not yet over: their opening events, by span."""
    retrying: bool = False
    """The last of these events was a ``model_retry``: a model call is being tried again
    (its answer, its failure for good or a fallback ends that)."""

    def observe(self, event: Event) -> None:
        if event.partial or event.type not in TRACKED_TYPES:
            return
        self.retrying = event.type is EventType.MODEL_RETRY
        if event.type is EventType.AGENT_MESSAGE:
            self.open_calls.update(_open_calls(event))
        elif event.type in (EventType.RATE_LIMIT_WAITING, EventType.RATE_LIMIT_WAIT):
            self._wait(event)
        elif event.type is EventType.TOOL_STARTED:
            self.started.update(p.call_id for p in event.parts if isinstance(p, ToolCallPart))
        elif event.type is EventType.TOOL_RESPONSE:
            for result in event.tool_results:
                self.open_calls.pop(result.call_id, None)
        elif event.approval is not None:
            self.approvals[event.approval.call_id] = event.approval.decision
        elif event.question is not None:
            self.questions[event.question.call_id] = event.type is EventType.USER_ANSWER

    def _wait(self, event: Event) -> None:
        if event.type is EventType.RATE_LIMIT_WAITING and event.span_id:
            self.open_waits[event.span_id] = event
        else:
            self.open_waits.pop(event.span_id or "", None)

    def observe_all(self, events: Iterable[Event]) -> CallLedger:
        for event in events:
            self.observe(event)
        return self

    def awaits_approval(self, call_id: str) -> bool:
        """Whether ``call_id`` asked for approval and has no decision yet."""
        return call_id in self.approvals and self.approvals[call_id] is None

    @property
    def waits_for_approval(self) -> bool:
        """Whether any call waits for a person's decision."""
        return any(verdict is None for verdict in self.approvals.values())

    def awaits_answer(self, call_id: str) -> bool:
        """Whether ``call_id`` asked the user a question that has no answer yet."""
        return self.questions.get(call_id) is False

    @property
    def waits_for_answer(self) -> bool:
        """Whether any call waits for the user's answer to its question."""
        return not all(self.questions.values())

    @property
    def is_open(self) -> bool:
        """Whether a tool call has no response or a rate-limit wait no end."""
        return bool(self.open_calls or self.open_waits)

    @property
    def waits_for_person(self) -> bool:
        return self.waits_for_approval or self.waits_for_answer

    def never_ran(self, call: OpenCall) -> bool:
        """Whether an open call certainly did not run: it waited for an approval that
        never came, or was denied, or it is a question still unanswered (asking has no
        effect). Any other open call may have taken effect."""
        if self.awaits_answer(call.call_id):
            return True
        return call.call_id in self.approvals and self.approvals[call.call_id] != "approve"

    def closing_events(
        self,
        session_id: str,
        *,
        started: str,
        not_run: str,
        ran: Container[str] | None = None,
    ) -> list[Event]:
        """A ``tool_response`` error (unsaved) for each open call, in the order they were
        made: ``not_run`` for a call that certainly never ran or had no effect
        (``never_ran``, or not among the calls known to have started: ``ran`` when it is
        given, else the journal's ``started``), ``started`` for the others. Both read
        ``"<code>: <message>"``.

        Without ``ran`` (the process that ran the turn is gone), the effect journal
        decides: a read-only tool that was running is ``not_run`` too, as it changed
        nothing and the record shows no result.

        Then a ``rate_limit_wait`` for each wait not yet over, saying ``not_run`` (the
        model call it held never ran)."""
        calls = [
            _closing(call, session_id, started if self._may_have_run(call, ran) else not_run)
            for call in self.open_calls.values()
        ]
        return calls + [_wait_ended(wait, not_run) for wait in self.open_waits.values()]

    def _may_have_run(self, call: OpenCall, ran: Container[str] | None) -> bool:
        known = self.started if ran is None else ran
        return not self.never_ran(call) and call.call_id in known


def _open_calls(event: Event) -> dict[str, OpenCall]:
    parts = [part for part in event.parts if isinstance(part, ToolCallPart)]
    return {part.call_id: _open_call(event, part) for part in parts}


def _open_call(event: Event, part: ToolCallPart) -> OpenCall:
    return OpenCall(
        call_id=part.call_id,
        name=part.name,
        invocation_id=event.invocation_id,
        author=event.author,
        branch=event.branch,
        span_id=part.span_id,
        parent_span_id=event.parent_span_id,
    )


def _closing(call: OpenCall, session_id: str, text: str) -> Event:
    part = ToolResponsePart(call_id=call.call_id, name=call.name, result=text, is_error=True)
    return Event(
        type=EventType.TOOL_RESPONSE,
        invocation_id=call.invocation_id,
        session_id=session_id,
        author=call.author,
        branch=call.branch,
        parts=[part],
        span_id=call.span_id,
        parent_span_id=call.parent_span_id,
    )


def _wait_ended(opened: Event, text: str) -> Event:
    """The end of a rate-limit wait the run's end cut short, as an error: ``text``."""
    error = ErrorInfo(code=error_code(text), message=text, failure="non_fatal")
    return opened.model_copy(
        update={
            "id": new_id(),
            "type": EventType.RATE_LIMIT_WAIT,
            "seq": None,
            "parts": [TextPart(text=text)],
            "started_at": opened.created_at,
            "created_at": utc_now(),
            "error": error,
        }
    )
