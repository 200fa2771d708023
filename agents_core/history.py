"""Rebuilds the conversation a model sees from a session's stored events.

``HistoryBuilder`` is incremental: it consumes each stored event once and keeps the
conversation so far, so a long session costs the same per model call as a short one;
``messages`` hands out a read-only ``Conversation`` over it rather than a copy.
``build_history`` is the one-shot form.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents_core.contracts import ToolCall, built
from agents_core.event_filters import apply_compaction, should_include_event
from agents_core.events import NO_ITEMS, Event, EventType, ThinkingPart
from agents_core.llm.contracts import Attachment, ChatMessage, Conversation, MessageLog
from agents_core.lru import SizedLru
from agents_core.sessions.base import Session

__all__ = ["Conversation", "HistoryBuilder", "HistoryCache", "build_history", "truncate"]

SUMMARY_PREFIX = "[Summary of the earlier conversation]"
INTERRUPTED_RESULT = "[no result: the tool call was interrupted before it finished]"


def truncate(text: str, max_chars: int) -> str:
    """Cut ``text`` to ``max_chars``, saying how much was dropped."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n[... truncated {len(text) - max_chars} characters]"


@dataclass(slots=True)
class HistoryBuilder:
    """The model messages for agent ``agent_name`` on ``branch``.

    The agent's own turns are assistant messages with their tool calls and ids; its tool
    results follow as tool messages (long ones truncated with a marker). Other agents'
    text arrives as user-side context, since this model did not say it; context that
    arrives while the agent's calls are open waits until they are answered. Every tool
    call is answered exactly once: one still open when ``messages`` is asked for (a
    cancelled run) gets a marker. Compaction summaries replace what they cover.
    """

    agent_name: str
    branch: str | None
    tool_result_max_chars: int
    _messages: MessageLog = field(default_factory=MessageLog)
    _pending: dict[str, str] = field(default_factory=dict)  # own open call id -> tool
    _held: list[ChatMessage] = field(default_factory=list)
    _first_own: dict[str, int] = field(default_factory=dict)  # invocation -> message index
    _seen_texts: dict[str, set[str]] = field(default_factory=dict)  # invocation -> texts
    _consumed: int = 0
    _last_id: str | None = None

    def continues(self, events: Sequence[Event]) -> bool:
        """Whether ``events`` extends what this builder has consumed."""
        if len(events) < self._consumed:
            return False
        return self._consumed == 0 or events[self._consumed - 1].id == self._last_id

    def update(self, events: Sequence[Event]) -> HistoryBuilder:
        """Consume the events after those already seen (``events`` must continue them);
        a new compaction event makes the builder start over from the summary."""
        new = events[self._consumed :]
        if any(e.type is EventType.COMPACTION for e in new):
            self._reset()
            new = apply_compaction(events)
        for event in new:
            self._feed(event)
        self._consumed = len(events)
        self._last_id = events[-1].id if events else None
        return self

    def messages(
        self, invocation_id: str | None = None, turn_input: str | None = None
    ) -> Conversation:
        """The conversation so far. ``turn_input`` is what the agent was asked to handle
        in ``invocation_id`` (an agent tool's request, a pipeline step's input): unless
        that text is already visible in the invocation, it is placed as a user message
        just before the agent's first turn of the invocation.

        A view, not a copy: the builder only ever appends to its messages (``update``
        starting over replaces the list), so the view shows them as they are now for
        as long as it is kept, whatever the builder consumes later."""
        done = len(self._messages)
        tail = [_marker(call_id, name) for call_id, name in self._pending.items()]
        tail.extend(self._held)
        if turn_input and turn_input not in self._seen_texts.get(invocation_id or "", ()):
            at = self._first_own.get(invocation_id or "", done + len(tail))
            asked = _message(role="user", text=turn_input)
            if at <= done:
                return Conversation(
                    (self._messages, 0, at),
                    ([asked], 0, 1),
                    (self._messages, at, done),
                    (tail, 0, len(tail)),
                )
            tail.insert(at - done, asked)
        return Conversation((self._messages, 0, done), (tail, 0, len(tail)))

    def _reset(self) -> None:
        self._messages, self._pending, self._held = MessageLog(), {}, []
        self._first_own, self._seen_texts = {}, {}

    def _feed(self, event: Event) -> None:
        if not should_include_event(event, self.branch):
            return
        own = event.author == self.agent_name
        if event.type is EventType.TOOL_RESPONSE:
            if own:
                self._answer(event)
            return
        if event.type is EventType.COMPACTION:
            self._close_pending()
            self._messages.append(_message(role="user", text=f"{SUMMARY_PREFIX}\n{event.text}"))
            return
        text = event.text
        if not own:
            self._seen_texts.setdefault(event.invocation_id, set()).add(text)
        if event.type is EventType.AGENT_MESSAGE and not own:
            if text:
                context = _message(role="user", text=f"[{event.author} said] {text}")
                (self._held if self._pending else self._messages).append(context)
            return
        self._close_pending()
        if event.type is EventType.USER_MESSAGE:
            self._messages.append(_message(role="user", text=text, attachments=_files(event)))
            return
        self._first_own.setdefault(event.invocation_id, len(self._messages))
        calls = event.tool_calls
        self._messages.append(_assistant(event, text, calls))
        self._pending.update((c.id, c.name) for c in calls)

    def _answer(self, event: Event) -> None:
        for result in event.tool_results:
            if self._pending.pop(result.call_id, None) is not None:
                output = truncate(result.output, self.tool_result_max_chars)
                self._messages.append(
                    _message(
                        role="tool", text=output, tool_call_id=result.call_id, name=result.name
                    )
                )
        if not self._pending:
            self._messages.extend(self._held)
            self._held.clear()

    def _close_pending(self) -> None:
        self._messages.extend(_marker(call_id, name) for call_id, name in self._pending.items())
        self._pending.clear()
        self._messages.extend(self._held)
        self._held.clear()


HISTORY_CACHE_SIZE = 256
"""History builders an agent keeps (``HistoryCache``'s default): sessions it served lately."""


_Key = tuple[str, str, str, str, str | None, int]


class HistoryCache:
    """History builders by session (its app, user and id: one user's builders never
    serve another's session), agent, branch and tool-result limit, the least
    recently used dropped first; at most ``max_builders`` of them and, when given,
    ``max_messages`` messages in all (a builder grown past it is not kept).

    An ``LlmAgent`` keeps one of its own, so that a session's next model call, and its
    next turn, convert only the events stored since. Agents built afresh for each run
    from the same definitions (Studio's) share one, so that a conversation's next run
    does too. A kept builder is used only for events that continue what it consumed
    (``HistoryBuilder.continues``): anything else starts a new one. Thread-safe: a
    builder is taken, brought up to date and put back under one lock.
    """

    def __init__(self, max_builders: int = HISTORY_CACHE_SIZE, max_messages: int | None = None):
        self._kept: SizedLru[_Key, HistoryBuilder] = SizedLru(max_builders, max_messages)
        self._lock = threading.Lock()

    def builder(
        self, session: Session, agent_name: str, branch: str | None, tool_result_max_chars: int
    ) -> HistoryBuilder:
        """The builder for ``session``'s history as ``agent_name`` on ``branch`` sees it,
        brought up to date with its events."""
        events = session.events
        key: _Key = (
            session.app_name,
            session.user_id,
            session.id,
            agent_name,
            branch,
            tool_result_max_chars,
        )
        with self._lock:
            builder = self._kept.pop(key)
            if builder is None or not builder.continues(events):
                builder = HistoryBuilder(agent_name, branch, tool_result_max_chars)
            builder.update(events)
            self._kept.put(key, builder, len(builder._messages))
        return builder

    def clear(self) -> None:
        self._kept.clear()

    @property
    def messages_kept(self) -> int:
        return self._kept.size

    def __len__(self) -> int:
        return len(self._kept)


def _files(event: Event) -> list[Attachment]:
    return [
        Attachment(blob_id=f.blob_id, content_type=f.content_type, name=f.name) for f in event.files
    ]


def _marker(call_id: str, name: str) -> ChatMessage:
    return _message(role="tool", text=INTERRUPTED_RESULT, tool_call_id=call_id, name=name)


def build_history(
    events: Iterable[Event],
    *,
    agent_name: str,
    branch: str | None,
    tool_result_max_chars: int,
    invocation_id: str | None = None,
    turn_input: str | None = None,
) -> list[ChatMessage]:
    """The model messages for ``agent_name`` from ``events`` (see ``HistoryBuilder``)."""
    builder = HistoryBuilder(agent_name, branch, tool_result_max_chars)
    return list(builder.update(list(events)).messages(invocation_id, turn_input))


def _assistant(event: Event, text: str, calls: list[ToolCall]) -> ChatMessage:
    """An agent's own message, with its signed thinking (if any) for the adapters that
    send thinking back (Anthropic's, on a tool-use turn)."""
    signed = next((p for p in event.parts if isinstance(p, ThinkingPart) and p.signature), None)
    if signed is None:
        return _message(role="assistant", text=text, tool_calls=calls)
    return _message(
        role="assistant",
        text=text,
        tool_calls=calls,
        thinking=signed.text,
        thinking_signature=signed.signature,
    )


def _message(**fields: Any) -> ChatMessage:
    """A ``ChatMessage`` from values made from stored events, validated already, without
    validating them again (``built``): a builder keeps one for every message of every
    session it serves, so each shares its fields set, and the read-only empty list the
    SDK's events share (``NO_ITEMS``) when it has no tool calls or attachments."""
    message = built(ChatMessage, **fields)
    values = message.__dict__
    if not values["tool_calls"]:
        values["tool_calls"] = NO_ITEMS
    if not values["attachments"]:
        values["attachments"] = NO_ITEMS
    return message
