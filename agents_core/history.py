"""Rebuilds the conversation a model sees from a session's stored events."""

from __future__ import annotations

from collections.abc import Iterable

from agents_core.event_filters import should_include_event
from agents_core.events import Event, EventType
from agents_core.llm.contracts import ChatMessage

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
INTERRUPTED_RESULT = "[no result: the tool call was interrupted before it finished]"


def truncate(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars``, saying how much was dropped."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[... truncated {len(text) - max_chars} characters]"


def build_history(
    events: Iterable[Event],
    *,
    agent_name: str,
    branch: str | None,
    tool_result_max_chars: int,
    invocation_id: str | None = None,
    turn_input: str | None = None,
) -> list[ChatMessage]:
    """The model messages for agent ``agent_name``.

    The agent's own turns are assistant messages with their tool calls and ids; its tool
    results follow as tool messages (long ones truncated with a marker). Other agents'
    text arrives as user-side context, since this model did not say it. Every tool call
    is answered exactly once: a call left unanswered (a cancelled run) gets a marker.

    ``turn_input`` is what this agent was asked to handle in invocation
    ``invocation_id`` (an agent tool's request, a pipeline step's input). Unless the
    same text is already visible in that invocation, it is placed as a user message
    just before the agent's first turn of the invocation.
    """
    messages: list[ChatMessage] = []
    pending: dict[str, str] = {}  # own call id -> tool name, not yet answered
    held: list[ChatMessage] = []  # others' words that arrived while own calls were open
    needs_input = bool(turn_input)
    for event in events:
        if not should_include_event(event, branch):
            continue
        own = event.author == agent_name
        current = event.invocation_id == invocation_id
        if needs_input and current:
            if own:
                messages.append(ChatMessage(role="user", text=turn_input or ""))
                needs_input = False
            elif event.text == turn_input:
                needs_input = False
        if event.type is EventType.TOOL_RESPONSE:
            if own:
                for result in event.tool_results:
                    if pending.pop(result.call_id, None) is not None:
                        output = truncate(result.output, tool_result_max_chars)
                        messages.append(_tool_message(result.call_id, result.name, output))
            if not pending:
                messages.extend(held)
                held.clear()
            continue
        if event.type is EventType.COMPACTION:
            _close_pending(messages, pending)
            messages.append(ChatMessage(role="user", text=f"{SUMMARY_PREFIX}\n{event.text}"))
            continue
        if not own and event.type is EventType.AGENT_MESSAGE:
            if event.text:
                context = ChatMessage(role="user", text=f"[{event.author} said] {event.text}")
                (held if pending else messages).append(context)
            continue
        _close_pending(messages, pending)
        messages.extend(held)
        held.clear()
        if event.type is EventType.USER_MESSAGE:
            messages.append(ChatMessage(role="user", text=event.text))
        else:
            calls = event.tool_calls
            messages.append(ChatMessage(role="assistant", text=event.text, tool_calls=calls))
            pending.update((c.id, c.name) for c in calls)
    _close_pending(messages, pending)
    messages.extend(held)
    if needs_input:
        messages.append(ChatMessage(role="user", text=turn_input or ""))
    return messages


def _tool_message(call_id: str, name: str, text: str) -> ChatMessage:
    return ChatMessage(role="tool", text=text, tool_call_id=call_id, name=name)


def _close_pending(messages: list[ChatMessage], pending: dict[str, str]) -> None:
    for call_id, name in pending.items():
        messages.append(_tool_message(call_id, name, INTERRUPTED_RESULT))
    pending.clear()
