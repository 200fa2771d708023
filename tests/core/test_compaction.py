"""Compaction: old events summarised at the end of a turn, never splitting a tool call."""

from __future__ import annotations

import pytest

from agents_core import Event, EventType, InMemorySessionService, LlmAgent, Runner, Usage
from agents_core.compaction import CompactionConfig, compact, plan_cut, transcript
from agents_core.event_filters import apply_compaction, should_include_event
from agents_core.events import (
    CompactionRange,
    EventActions,
    TextPart,
    ToolCallPart,
    ToolResponsePart,
)
from agents_core.exceptions import ConfigurationError, ModelServerError
from agents_core.history import SUMMARY_PREFIX
from agents_core.llm import ChatMessage, LlmRequest
from agents_core.llm.resilience import BreakerRegistry
from agents_core.llm.scripted import ScriptedResponse
from agents_core.span_contract import SUMMARY_FAILED
from agents_core.spans import spans_of
from agents_core.testing import ScriptedModel, collect, reply


def _event(seq: int, kind: EventType = EventType.AGENT_MESSAGE, **fields: object) -> Event:
    defaults: dict[str, object] = {"parts": [TextPart(text=f"m{seq}")]}
    defaults.update(fields)
    return Event(
        type=kind,
        invocation_id="i",
        session_id="s",
        seq=seq,
        author="user" if kind is EventType.USER_MESSAGE else "bot",
        **defaults,  # type: ignore[arg-type]
    )


def _call(seq: int, call_id: str) -> Event:
    return _event(seq, parts=[ToolCallPart(call_id=call_id, name="t")])


def _result(seq: int, call_id: str) -> Event:
    part = ToolResponsePart(call_id=call_id, name="t", result="r")
    return _event(seq, EventType.TOOL_RESPONSE, parts=[part])


def config(threshold: int = 4, keep_last: int = 2) -> CompactionConfig:
    return CompactionConfig(
        ScriptedModel([reply("summary")]), threshold=threshold, keep_last=keep_last
    )


def test_nothing_is_compacted_below_the_threshold() -> None:
    events = [_event(i) for i in range(1, 5)]
    assert plan_cut(events, config(threshold=4)) is None


def test_the_cut_keeps_the_last_events_raw() -> None:
    events = [_event(i) for i in range(1, 8)]
    assert plan_cut(events, config(threshold=4, keep_last=2)) == 5


def test_the_cut_never_separates_a_tool_call_from_its_response() -> None:
    events = [_event(1), _event(2), _event(3), _call(4, "c"), _result(5, "c"), _event(6), _event(7)]
    # keep_last=3 would cut after seq 4, between the call and its response
    assert plan_cut(events, config(threshold=4, keep_last=3)) == 3


def test_compaction_is_skipped_while_a_call_is_unanswered() -> None:
    events = [_event(i) for i in range(1, 7)] + [_call(7, "open")]
    assert plan_cut(events, config(threshold=4, keep_last=2)) is None


def test_apply_compaction_swaps_the_summary_in_for_the_covered_events() -> None:
    summary = _event(
        6,
        EventType.COMPACTION,
        parts=[TextPart(text="S")],
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=3)),
    )
    events = [_event(i) for i in range(1, 6)] + [summary]
    assert [e.seq for e in apply_compaction(events)] == [6, 4, 5]


def test_a_newer_compaction_subsumes_an_older_one() -> None:
    old = _event(
        4,
        EventType.COMPACTION,
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=2)),
    )
    new = _event(
        7,
        EventType.COMPACTION,
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=5)),
    )
    events = [_event(1), _event(2), _event(3), old, _event(5), _event(6), new]
    assert [e.seq for e in apply_compaction(events)] == [7, 6]


def test_compaction_events_count_as_conversation() -> None:
    summary = _event(
        2,
        EventType.COMPACTION,
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=1)),
    )
    assert should_include_event(summary)


def test_config_rejects_keep_last_not_below_threshold() -> None:
    with pytest.raises(ConfigurationError):
        CompactionConfig(ScriptedModel([]), threshold=3, keep_last=3)


async def test_runner_compacts_at_the_end_of_a_turn_and_the_model_then_sees_the_summary(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([reply(f"answer {i}") for i in range(6)])
    summarizer = ScriptedModel([], summaries=[reply("They talked about numbers.")])
    runner = Runner(
        LlmAgent("bot", model=model),
        session_service=sessions,
        breakers=breakers,
        compaction=CompactionConfig(summarizer, threshold=6, keep_last=2),
    )
    for turn in range(3):
        events = await collect(runner.astream(user_id="u", session_id="s", message=f"q{turn}"))
        assert EventType.COMPACTION not in [e.type for e in events]
    events = await collect(runner.astream(user_id="u", session_id="s", message="q3"))
    compaction = events[-1]
    assert compaction.type is EventType.COMPACTION
    # four events a turn (user, start, message, end): "answer 2" is seq 11
    assert compaction.actions.compaction == CompactionRange(start_seq=1, end_seq=11)
    assert "user: q0" in summarizer.requests[0].messages[0].text

    await collect(runner.astream(user_id="u", session_id="s", message="q4"))
    seen = model.requests[-1].messages
    assert seen[0].text == f"{SUMMARY_PREFIX}\nThey talked about numbers."
    assert [m.text for m in seen[1:]] == ["q3", "answer 3", "q4"]


async def test_a_failing_summariser_leaves_the_session_unchanged_and_says_so(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    summarizer = ScriptedModel([], summaries=[ModelServerError("down")])
    runner = Runner(
        LlmAgent("bot", model=ScriptedModel([reply("a")], loop=True)),
        session_service=sessions,
        breakers=breakers,
        compaction=CompactionConfig(summarizer, threshold=2, keep_last=1, model_name="small"),
    )
    await collect(runner.astream(user_id="u", session_id="s", message="one"))
    events = await collect(runner.astream(user_id="u", session_id="s", message="two"))
    assert len(summarizer.requests) == 1
    assert EventType.COMPACTION not in [e.type for e in events]
    assert events[-2].type is EventType.AGENT_END and events[-3].text == "a"
    # The failed call is in the record, after the turn, on a span of its own under the
    # turn's root agent; not fatal: the turn stands, and the next one runs.
    failed = events[-1]
    assert failed.type is EventType.ERROR and failed.seq is not None and failed.error is not None
    assert (failed.error.code, failed.error.failure) == (SUMMARY_FAILED, "non_fatal")
    assert failed.error.message == "the session was not summarised: model_server_error: down"
    assert failed.model == "small" and failed.latency_ms is not None
    root = next(e for e in events if e.type is EventType.AGENT_START)
    assert failed.parent_span_id == root.span_id and failed.span_id not in {root.span_id, None}
    span = next(s for s in spans_of(e.to_wire() for e in events) if s.span_id == failed.span_id)
    assert (span.kind, span.name, span.status) == ("model", "summary", "error")
    assert span.error == f"{SUMMARY_FAILED}: {failed.error.message}"
    assert not failed.is_terminal_error


def test_a_summary_whose_covered_events_were_not_loaded_comes_first() -> None:
    summary = _event(
        6,
        EventType.COMPACTION,
        parts=[TextPart(text="S")],
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=3)),
    )
    loaded = [_event(4), _event(5), summary, _event(7)]  # from the newest compaction on
    everything = [_event(i) for i in range(1, 6)] + [summary, _event(7)]
    assert [e.seq for e in apply_compaction(loaded)] == [6, 4, 5, 7]
    assert [e.seq for e in apply_compaction(loaded)] == [
        e.seq for e in apply_compaction(everything)
    ]


async def test_a_scripted_model_summarises_without_playing_its_script() -> None:
    model = ScriptedModel([reply("the agent's one turn")])
    events = [_event(i) for i in range(1, 8)]
    summary = await compact(
        events,
        CompactionConfig(summarizer=model, threshold=4, keep_last=2),
        invocation_id="i",
        author="a",
    )
    assert summary is not None and summary.text.startswith("An earlier conversation")
    assert model.requests[-1].purpose == "summary"
    request = LlmRequest(messages=[ChatMessage(role="user", text="hi")])
    final = [r async for r in model.astream(request) if not r.partial]
    assert final[-1].text == "the agent's one turn"  # the script was not used up


async def test_a_compaction_event_carries_what_the_summary_call_used() -> None:
    used = Usage(input_tokens=900, output_tokens=40, cached_input_tokens=512)
    summary = ScriptedResponse(text="They talked.", usage=used)
    events = [_event(i) for i in range(1, 8)]

    compaction = await compact(
        events,
        CompactionConfig(ScriptedModel([], summaries=[summary]), threshold=4, keep_last=2),
        invocation_id="i",
        author="a",
    )

    assert compaction is not None and compaction.usage == used


def test_the_transcript_cuts_each_entry_so_huge_messages_fit_the_summariser() -> None:
    huge = _event(1, parts=[TextPart(text="x" * 100_000)])
    text = transcript([huge, _event(2, EventType.USER_MESSAGE, parts=[TextPart(text="short")])])
    assert len(text) < 2_100 + 20
    assert text.endswith("user: short") and "[…]" in text
