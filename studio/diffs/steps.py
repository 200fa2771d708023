"""A run's events as the steps a diff compares.

A step is what a person would call one thing the run did: the user's message, one
model reply (its text, thinking, structured answer and the tools it chose), one tool
call with its result, an error, an approval, a question, a policy decision. Its ``key``
says who took it and what kind it is (``author``, ``branch``, ``kind``, and for a tool
call or an approval the tool's name), with the run's root agent written ``ROOT``: the
steps of two agents (a duplicate with a new prompt) pair up as their versions' do, and
their sub-agents by their paths below the root. Its ``content`` is the JSON compared, without what
differs in every run (ids, seqs, times, span ids, call ids, hashes) and without its
figures (tokens, cost, latency), which are shown beside it but never make it "changed".

Bookkeeping events are not steps: an agent's start and end, the effect journal's
``tool_started``, waits for a rate limit, pauses and resumes, and parking on a person
(a parked run and one that waited in its execution did the same steps).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from agents_core import events as core_events
from studio.diffs.align import Item

EventType = core_events.EventType

NOT_STEPS = frozenset(
    {
        EventType.AGENT_START,
        EventType.AGENT_END,
        EventType.TOOL_STARTED,
        EventType.RATE_LIMIT_WAITING,
        EventType.RATE_LIMIT_WAIT,
        EventType.MODEL_RETRY,
        EventType.RUN_PAUSED,
        EventType.RUN_RESUMED,
        EventType.RUN_PARKED,
    }
)
ROOT = "(root)"
MESSAGE = "model_reply"
TOOL = "tool_call"
_VOLATILE = frozenset({"call_id", "args_hash", "span_id", "signature", "decided_by", "answered_by"})
"""Fields that name a call or a person rather than say what happened."""


@dataclass(slots=True)
class Step:
    """One step of a run. ``seq`` is the event it starts at (a tool call's: the reply
    that made it; ``result_seq``: its result's)."""

    seq: int
    kind: str
    author: str
    branch: str
    content: dict[str, Any]
    tool: str = ""
    result_seq: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: Decimal | None = None
    cost_currency: str = ""
    latency_ms: float | None = None
    root: str = ""
    """The run's root agent (``key`` writes it ``ROOT``)."""
    _fingerprint: str = field(default="", repr=False)

    @property
    def key(self) -> tuple[str, ...]:
        return self._relative(self.author), self._relative(self.branch), self.kind, self.tool

    def _relative(self, path: str) -> str:
        if not self.root or not (path == self.root or path.startswith(f"{self.root}.")):
            return path
        return ROOT + path[len(self.root) :]

    @property
    def fingerprint(self) -> str:
        """The content as canonical JSON: equal contents, equal fingerprints."""
        if not self._fingerprint:
            self._fingerprint = canonical(self.content)
        return self._fingerprint

    def item(self) -> Item:
        return Item(self.key, self.fingerprint)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def steps_of(events: Iterable[core_events.Event]) -> list[Step]:
    """The steps of a run's stored events, in seq order."""
    steps = _steps(events)
    # The root agent heads every agent's path (``branch``): the first reply may be a
    # sub-agent's (a sequential agent's first step), never the root's own.
    root = next((step.branch.split(".")[0] for step in steps if step.author != "user"), "")
    for step in steps:
        step.root = root
    return steps


def _steps(events: Iterable[core_events.Event]) -> list[Step]:
    steps: list[Step] = []
    open_calls: dict[str, Step] = {}
    for event in events:
        if event.type in NOT_STEPS or event.partial:
            continue
        if event.type is EventType.AGENT_MESSAGE:
            steps += _reply(event, open_calls)
        elif event.type is EventType.TOOL_RESPONSE:
            steps += _results(event, open_calls)
        else:
            steps.append(_other(event))
    return steps


def _base(event: core_events.Event, kind: str, content: dict[str, Any], tool: str = "") -> Step:
    return Step(
        seq=event.seq or 0,
        kind=kind,
        author=event.author,
        branch=event.branch or event.author,
        content=content,
        tool=tool,
    )


def _reply(event: core_events.Event, open_calls: dict[str, Step]) -> list[Step]:
    """A model reply: one step for the reply, one per tool call it makes."""
    parts = [part for part in event.parts if not isinstance(part, core_events.ToolCallPart)]
    calls = [part for part in event.parts if isinstance(part, core_events.ToolCallPart)]
    content: dict[str, Any] = {}
    if parts:
        content["parts"] = [_scrubbed(part.model_dump(mode="json")) for part in parts]
    content = _common(event, content)
    if calls:
        content["calls"] = [call.name for call in calls]
    reply = _base(event, MESSAGE, content)
    _figures(reply, event)
    steps = [reply]
    for call in calls:
        args: dict[str, Any] = {"args": call.args}
        if call.retry_of:
            args["retry"] = True
        step = _base(event, TOOL, args, tool=call.name)
        open_calls[call.call_id] = step
        steps.append(step)
    return steps


def _results(event: core_events.Event, open_calls: dict[str, Step]) -> list[Step]:
    """A tool response completes the steps of the calls it answers; one that answers a
    call this run did not make (a resumed run's) is a step of its own."""
    answered: list[Step] = []
    for part in event.parts:
        if not isinstance(part, core_events.ToolResponsePart):
            continue
        step = open_calls.pop(part.call_id, None)
        if step is None:
            step = _base(event, TOOL, {}, tool=part.name)
            answered.append(step)
        step.content.update(_result(part))
        step.content.update(_common(event, {}))
        step.result_seq = event.seq
        step.latency_ms = _tool_ms(event)
    return answered


def _tool_ms(event: core_events.Event) -> float | None:
    """What the tool took to run, as the timeline says: its ``latency_ms`` (a wait for
    approval and storing the response left out); from its start to the response when an
    older event has only its start."""
    if event.latency_ms is not None:
        return event.latency_ms
    if event.started_at is not None:
        return (event.created_at - event.started_at).total_seconds() * 1000
    return None


def _result(part: core_events.ToolResponsePart) -> dict[str, Any]:
    """The result as JSON when it is an object or array written as text (so it is
    compared structurally), else as its text."""
    result: Any = part.result
    stripped = part.result.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            result = json.loads(part.result)
        except ValueError:
            result = part.result
    return {"result": result, **({"is_error": True} if part.is_error else {})}


def _other(event: core_events.Event) -> Step:
    payload = event.to_wire()
    content: dict[str, Any] = {}
    if event.parts:
        content["parts"] = [_scrubbed(part) for part in payload["parts"]]
    for name in ("error", "approval", "question", "policy", "fallback"):
        if payload.get(name) is not None:
            content[name] = _scrubbed(payload[name])
    tool = event.approval.tool if event.approval is not None else ""
    step = _base(event, event.type.value, _common(event, content), tool=tool)
    if event.type in (EventType.COMPACTION, EventType.MEMORY_SAVED):
        _figures(step, event)
    return step


def _common(event: core_events.Event, content: dict[str, Any]) -> dict[str, Any]:
    """What any event may add: its actions (state delta, transfer, artifacts), the hooks
    that changed it, the model that answered and whether from the cache."""
    actions = _scrubbed(event.actions.model_dump(mode="json"))
    if actions:
        content["actions"] = actions
    if event.hooks:
        content["hooks"] = [hook.model_dump(mode="json") for hook in event.hooks]
    if event.model is not None:
        content["model"] = event.model
    if event.cached:
        content["cached"] = True
    return content


def _scrubbed(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` without volatile fields and without empty or default ones, at its top
    level only: what lies below (arguments, state) is the run's data, kept whole."""
    return {key: item for key, item in value.items() if key not in _VOLATILE and not _empty(item)}


def _empty(value: Any) -> bool:
    if value is None or value is False:
        return True
    return isinstance(value, str | list | dict) and not value


def _figures(step: Step, event: core_events.Event) -> None:
    if event.usage is not None:
        step.input_tokens = event.usage.input_tokens
        step.output_tokens = event.usage.output_tokens
    if event.cost is not None:
        step.cost, step.cost_currency = event.cost.amount, event.cost.currency
    step.latency_ms = event.latency_ms


def final_answer(events: Iterable[core_events.Event]) -> str | None:
    """The run's answer: the text of its last complete reply that calls no tool."""
    answer = None
    for event in events:
        if event.is_final_response():
            answer = event.text
    return answer
