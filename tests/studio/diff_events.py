"""Runs written as the events they store, for the diff tests: each call of a ``Script``
appends the event a run would, with fresh ids, seqs and times (which a diff ignores)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from agents_core import events as ev
from agents_core.contracts import Cost, Usage

START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Script:
    """One run's events, in order. ``offset`` shifts its seqs (a later run of a session)."""

    offset: int = 0
    events: list[ev.Event] = field(default_factory=list)
    invocation: str = field(default_factory=ev.new_id)
    _calls: int = 0

    def _add(self, type_: ev.EventType, agent: str, **fields: Any) -> ev.Event:
        """An event of ``agent``: its path (``root.helper``), whose last name is its author."""
        seq = self.offset + len(self.events) + 1
        author = agent.rsplit(".", 1)[-1]
        fields.setdefault("branch", agent if agent != "user" else None)
        event = ev.Event(
            type=type_,
            invocation_id=self.invocation,
            session_id="s",
            seq=seq,
            author=author,
            created_at=START + timedelta(seconds=seq),
            **fields,
        )
        self.events.append(event)
        return event

    def user(self, text: str) -> Script:
        self._add(ev.EventType.USER_MESSAGE, "user", parts=[ev.TextPart(text=text)])
        return self

    def start(self, agent: str = "root") -> Script:
        self._add(ev.EventType.AGENT_START, agent)
        return self

    def end(self, agent: str = "root") -> Script:
        self._add(ev.EventType.AGENT_END, agent)
        return self

    def say(
        self,
        text: str,
        *,
        agent: str = "root",
        tokens: tuple[int, int] = (10, 5),
        cost: str | None = None,
        latency_ms: float = 100.0,
        state: dict[str, Any] | None = None,
    ) -> Script:
        self._add(
            ev.EventType.AGENT_MESSAGE,
            agent,
            parts=[ev.TextPart(text=text)],
            usage=Usage(input_tokens=tokens[0], output_tokens=tokens[1]),
            cost=None if cost is None else Cost(amount=Decimal(cost), currency="USD"),
            latency_ms=latency_ms,
            actions=ev.EventActions(state_delta=state or {}),
        )
        return self

    def call(
        self,
        tool: str,
        args: dict[str, Any],
        result: str,
        *,
        agent: str = "root",
        ran_ms: float | None = None,
    ) -> Script:
        """A reply calling ``tool``, then its response with ``result`` (which took
        ``ran_ms`` to run, when given: older events have only their start)."""
        self._calls += 1
        call_id = f"{self.invocation[:6]}-{self._calls}"
        self._add(
            ev.EventType.AGENT_MESSAGE,
            agent,
            parts=[ev.ToolCallPart(call_id=call_id, name=tool, args=args, span_id=ev.new_id())],
            usage=Usage(input_tokens=20, output_tokens=3),
            latency_ms=50.0,
        )
        self._add(
            ev.EventType.TOOL_RESPONSE,
            agent,
            parts=[ev.ToolResponsePart(call_id=call_id, name=tool, result=result)],
            started_at=START,
            latency_ms=ran_ms,
        )
        return self

    def error(self, code: str, message: str, *, agent: str = "root") -> Script:
        self._add(ev.EventType.ERROR, agent, error=ev.ErrorInfo(code=code, message=message))
        return self
