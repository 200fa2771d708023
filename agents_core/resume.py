"""Where a resumed turn picks up: what the interrupted turn finished, and the calls it
left closed without a result.

A turn resumed from the record (``Runner.astream(message=None)``) is a new invocation
whose agents read the record. ``ResumePoint`` is what they read it for, built once by
the runner from the events after the last user message (the interrupted invocation and
any earlier resumption of it):

- A workflow agent (sequential, parallel, loop) skips each child that ended there
  (``skips``): its events stand, and a sequential pipeline hands on its recorded answer
  (``answer_of``). The child that was running when the turn stopped runs again.
- The ``LlmAgent`` that was running takes the calls the interruption closed
  (``take_calls``): a call closed ``not_run`` certainly had no effect and is retried as
  a fresh call (``ToolCallPart.retry_of``); a call closed ``in_doubt`` (the effect
  journal says it started) never runs again: its tool's failure policy says what the
  resumed turn does about it (``fail`` ends it, ``degrade`` marks it, ``continue``
  leaves the error result for the model to read).

Only the latest invocation's closures are taken: an earlier resumption handled its own.

A run that parked on a person (``agents_core.approvals.RunParked``) resumes the same
way, under its own invocation id: the agent that parked takes the calls it asked about
and nobody decided in the record yet (``take_parked``) and waits on their decisions
again, which its host hands over before the run starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from agents_core import ledger
from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType, ToolCallPart, new_id
from agents_core.exceptions import FailedByPolicyError
from agents_core.failures import FailurePolicy

AgentKey = tuple[str, str | None]
"""An agent as the record knows it: its name and its branch."""
Closure = Literal["not_run", "in_doubt"]


@dataclass(frozen=True, slots=True)
class ClosedCall:
    """A tool call the interruption closed without a result, as the model made it."""

    call: ToolCallPart
    closure: Closure


@dataclass(frozen=True, slots=True)
class ParkedCall:
    """A call that parked its run: as the model made it, and its stored request."""

    call: ToolCallPart
    asked: Event


@dataclass(slots=True)
class ResumePoint:
    """What an interrupted turn left: built by ``of``; consumed as agents resume."""

    ended: dict[AgentKey, str | None] = field(default_factory=dict)
    """Agents that ended in the turn, with their last final answer (``None``: none)."""
    closed: dict[AgentKey, list[ClosedCall]] = field(default_factory=dict)
    """Per agent, the calls the latest interruption closed, in the order they were made."""
    started: dict[AgentKey, str] = field(default_factory=dict)
    """Per agent, the invocation it first started in during the turn."""
    parked: dict[AgentKey, list[ParkedCall]] = field(default_factory=dict)
    """Per agent, the calls it asked a person about that nobody decided yet."""
    spans: dict[AgentKey, str] = field(default_factory=dict)
    """Per agent that was running when the turn parked, its span: the agent goes on in
    it, so a parked run's agent is one span from its start to its end."""
    _skipped: set[AgentKey] = field(default_factory=set)

    @classmethod
    def of(cls, events: Sequence[Event]) -> ResumePoint:
        """The resume point of the turn ``events`` (a session's record) ends with."""
        turn = _last_turn(events)
        point = cls()
        answers: dict[AgentKey, str | None] = {}
        for event in turn:
            key = (event.author, event.branch)
            if event.is_final_response():
                answers[key] = event.text
            elif event.type is EventType.AGENT_START:
                point.started.setdefault(key, event.invocation_id)
            elif event.type is EventType.AGENT_END:
                point.ended[key] = answers.get(key)
        latest = turn[-1].invocation_id if turn else None
        calls = {
            part.call_id: part
            for event in turn
            if event.type is EventType.AGENT_MESSAGE
            for part in event.parts
            if isinstance(part, ToolCallPart)
        }
        for event in turn:
            if event.type is not EventType.TOOL_RESPONSE or event.invocation_id != latest:
                continue
            for result in event.tool_results:
                closure = ledger.error_code(result.output) if result.is_error else ""
                call = calls.get(result.call_id)
                if call is not None and closure in (ledger.NOT_RUN, ledger.IN_DOUBT):
                    closed = ClosedCall(call, closure)  # type: ignore[arg-type]
                    point.closed.setdefault((event.author, event.branch), []).append(closed)
        point.parked = _parked(turn, calls)
        if turn and turn[-1].type is EventType.RUN_PARKED:
            point.spans = _running(turn)
        return point

    def skips(self, name: str, branch: str | None) -> bool:
        """Whether agent ``name`` on ``branch`` ended in the interrupted turn, so its
        workflow skips it: true once, the first time it is asked."""
        key = (name, branch)
        if key not in self.ended or key in self._skipped:
            return False
        self._skipped.add(key)
        return True

    def answer_of(self, name: str, branch: str | None) -> str | None:
        """The final answer agent ``name`` gave on ``branch`` before it ended."""
        return self.ended.get((name, branch))

    def history_invocation(self, name: str, branch: str | None, current: str) -> str:
        """The invocation whose start agent ``name`` reads its history from: the one it
        first started in, so resuming does not show it its input a second time."""
        return self.started.get((name, branch), current)

    def reopen(self, name: str, branch: str | None) -> str | None:
        """The span agent ``name`` on ``branch`` was running in when the turn parked
        (``None`` if it was not): it goes on in it, once."""
        return self.spans.pop((name, branch), None)

    def take_parked(self, name: str, branch: str | None) -> list[ParkedCall]:
        """The calls agent ``name`` on ``branch`` parked on; empty the second time."""
        return self.parked.pop((name, branch), [])

    def take_calls(self, name: str, branch: str | None) -> list[ClosedCall]:
        """The calls of agent ``name`` on ``branch`` the interruption closed; empty the
        second time, so an agent that runs again in the turn takes them once."""
        return self.closed.pop((name, branch), [])


def _parked(
    turn: Sequence[Event], calls: Mapping[str, ToolCallPart]
) -> dict[AgentKey, list[ParkedCall]]:
    """Per agent, the calls of ``turn`` it asked a person about, undecided."""
    parked: dict[AgentKey, list[ParkedCall]] = {}
    for asked in undecided_requests(turn):
        found = calls.get(asked.approval.call_id) if asked.approval else None
        if found is not None:
            parked.setdefault((asked.author, asked.branch), []).append(ParkedCall(found, asked))
    return parked


def _running(turn: Sequence[Event]) -> dict[AgentKey, str]:
    """Per agent, the span of its start in ``turn`` that no end closed."""
    started: dict[str, AgentKey] = {}
    for event in turn:
        if event.type is EventType.AGENT_START and event.span_id:
            started[event.span_id] = (event.author, event.branch)
        elif event.type is EventType.AGENT_END and event.span_id:
            started.pop(event.span_id, None)
    return {key: span for span, key in started.items()}


def undecided_requests(turn: Sequence[Event]) -> list[Event]:
    """The ``approval_request`` events of ``turn`` no decision or response followed."""
    open_requests: dict[str, Event] = {}
    for event in turn:
        if event.type is EventType.APPROVAL_REQUEST and event.approval is not None:
            open_requests[event.approval.call_id] = event
        elif event.type is EventType.APPROVAL_DECISION and event.approval is not None:
            open_requests.pop(event.approval.call_id, None)
        elif event.type is EventType.TOOL_RESPONSE:
            for result in event.tool_results:
                open_requests.pop(result.call_id, None)
    return list(open_requests.values())


def _last_turn(events: Sequence[Event]) -> Sequence[Event]:
    """The events from the last user message on (all of them when there is none)."""
    for index in range(len(events) - 1, -1, -1):
        if events[index].type is EventType.USER_MESSAGE:
            return events[index:]
    return events


def in_doubt_reports(
    ctx: Context, closed: Sequence[ClosedCall], failures: Mapping[str, FailurePolicy]
) -> list[Event]:
    """What the resumed agent says about its calls left in doubt, per their tool's
    failure policy (``continue`` when it names none): nothing for ``continue`` (the
    model reads the recorded error result), a degraded non-fatal error for ``degrade``;
    ``fail`` raises ``FailedByPolicyError`` before anything is retried."""
    reports = []
    for item in closed:
        if item.closure != ledger.IN_DOUBT:
            continue
        call = item.call
        message = (
            f"tool {call.name!r} (call {call.call_id}) may or may not have taken effect before "
            "the run was interrupted; it is not run again"
        )
        policy = failures.get(call.name, FailurePolicy.CONTINUE)
        if policy is FailurePolicy.FAIL:
            raise FailedByPolicyError(f"{message} (its failure policy is fail)", code="in_doubt")
        if policy is FailurePolicy.DEGRADE:
            error = ErrorInfo(code="in_doubt", message=message, failure="non_fatal", degraded=True)
            reports.append(ctx.event(EventType.ERROR, error=error))
    return reports


def retry_message(ctx: Context, closed: Sequence[ClosedCall]) -> Event | None:
    """The agent's message that runs again, as fresh calls, the calls closed before
    they started (``not_run``); ``None`` when there are none."""
    parts = [
        ToolCallPart(
            call_id=f"retry-{new_id()}",
            name=item.call.name,
            args=item.call.args,
            span_id=new_id(),
            retry_of=item.call.call_id,
        )
        for item in closed
        if item.closure == ledger.NOT_RUN
    ]
    return ctx.event(EventType.AGENT_MESSAGE, parts=list(parts)) if parts else None
