"""What a case's session did (its ``Outcome``), read from the events it stored, and the
``Expectation`` that would pass it (to add a turn that went well to a dataset).

The host (Studio's eval runs, a test, a script) knows what the events alone do not say
for sure, so it passes it in: the session state at the end, what the runs cost (unknown
is ``None``, never zero), their tokens, wall time and error. ``tokens_of`` and
``error_of`` read the last two from the events, for hosts that have nothing better.

What is read from the events:

- the final output: the text of the last complete agent answer that calls no tool, in
  the last turn (the events after the last user message). Streamed partial chunks are
  skipped; a last turn without such an answer (it failed, or waits for a person) has an
  empty final output, never an earlier turn's answer;
- the tool calls of every turn and every agent (sub-agents' too), in the order the
  models made them, with their arguments. A call an agent runs again after an
  interruption (``retry_of``) is the same call as the one it retries, so it is not
  counted twice;
- the steps: the model calls made, i.e. the complete agent messages, except answers
  served from the response cache or by a hook in the model's place (no model was
  called).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from agents_core.evals.contracts import (
    Expectation,
    ExpectedToolCall,
    ObservedToolCall,
    Outcome,
)
from agents_core.events import Event, EventType, ToolCallPart

__all__ = ["error_of", "expectation_from_outcome", "outcome_from_events", "tokens_of"]

_TOKEN_EVENTS = frozenset({EventType.AGENT_MESSAGE, EventType.MEMORY_SAVED, EventType.COMPACTION})


def outcome_from_events(
    events: Sequence[Event],
    *,
    state: Mapping[str, Any],
    cost: Decimal | None,
    tokens: int,
    latency_s: float,
    error: str | None,
) -> Outcome:
    """The outcome of a case's session from its ``events`` (every turn's, in order).

    ``state`` is the session state when the case ended, ``cost`` what its runs cost
    (``None`` when some call's price was unknown), ``tokens`` the tokens they used,
    ``latency_s`` the wall time from the first turn's start to the last one's end, and
    ``error`` the code and message of a turn that did not succeed (``None`` if all did).
    """
    return Outcome(
        final_output=final_output(events),
        tool_calls=tool_calls_of(events),
        state=dict(state),
        cost=cost,
        tokens=tokens,
        latency_s=latency_s,
        steps=steps_of(events),
        error=error,
    )


def final_output(events: Iterable[Event]) -> str:
    """The text of the last complete answer without tool calls, in the last turn."""
    answer = ""
    for event in events:
        if event.type is EventType.USER_MESSAGE:
            answer = ""  # a new turn: an earlier turn's answer is not this one's
        elif event.is_final_response():
            answer = event.text
    return answer


def tool_calls_of(events: Iterable[Event]) -> list[ObservedToolCall]:
    """Every tool call the model made, in order, with its arguments (retries of an
    interrupted call are the call they retry, so they are left out)."""
    return [
        ObservedToolCall(name=part.name, args=part.args)
        for event in events
        if event.type is EventType.AGENT_MESSAGE and not event.partial
        for part in event.parts
        if isinstance(part, ToolCallPart) and part.retry_of is None
    ]


def steps_of(events: Iterable[Event]) -> int:
    """How many model calls the events record."""
    return sum(
        1
        for event in events
        if event.type is EventType.AGENT_MESSAGE and not event.partial and _model_called(event)
    )


def _model_called(event: Event) -> bool:
    if event.cached or event.replayed:
        return False
    return not any(
        note.stage == "before_model" and note.effect == "short_circuited" for note in event.hooks
    )


def tokens_of(events: Iterable[Event]) -> int:
    """The tokens (input and output) of every model call the events record: agent
    answers, and the calls that summarised (compaction) or saved memories."""
    return sum(
        event.usage.total_tokens
        for event in events
        if event.usage is not None and not event.partial and event.type in _TOKEN_EVENTS
    )


def error_of(events: Iterable[Event]) -> str | None:
    """The code and message of the last terminal error the events record, as
    ``"code: message"``; ``None`` when there is none."""
    found: str | None = None
    for event in events:
        if event.is_terminal_error and event.error is not None:
            found = f"{event.error.code}: {event.error.message}"
    return found


def expectation_from_outcome(outcome: Outcome) -> Expectation:
    """What a case built from ``outcome`` expects: the same final output, the same tool
    calls with the same arguments, and the same end state (each left out when the run
    had none). Limits are not guessed from one run: the user sets them. An output
    longer than a case may expect (``TEXT_MAX``) is a ``ValidationError``, not a
    silently cut expectation that no run could ever match."""
    return Expectation(
        final_output=outcome.final_output or None,
        tool_calls=[ExpectedToolCall(name=c.name, args=c.args) for c in outcome.tool_calls],
        state=dict(outcome.state) if outcome.state else None,
    )
