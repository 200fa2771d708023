"""Where a run's wall time went (``studio.traces.timing``), from its spans."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agents_core.spans import Span
from studio.traces.timing import wall_time

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(ms: float) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def span(kind: str, start: float, end: float | None, **attributes: object) -> Span:
    return Span(
        span_id=f"{kind}{start}",
        parent_span_id=None,
        kind=kind,  # type: ignore[arg-type]
        name=kind,
        author="agent",
        branch="agent",
        invocation_id="inv",
        start=at(start),
        end=None if end is None else at(end),
        status="open" if end is None else "ok",
        attributes=attributes,
    )


def model(start: float, end: float) -> Span:
    return span("model", start, end)


def tool(asked: float, ran_from: float, ran_ms: float) -> Span:
    """A tool call the model made at ``asked``, which ran ``ran_ms`` from ``ran_from``."""
    return span("tool", asked, ran_from + ran_ms, ran_from=at(ran_from), ran_ms=ran_ms)


def wait(start: float, end: float | None) -> Span:
    return span("human", start, end)


def test_a_sequential_run_splits_into_queue_model_tools_human_and_overhead() -> None:
    spans = [
        span("agent", 25, 1310),
        model(30, 130),
        tool(130, ran_from=1150, ran_ms=50),  # asked at 130, approved at 1140
        wait(140, 1140),
        model(1220, 1300),
    ]
    assert wall_time(at(0), at(20), at(1320), spans) == {
        "total_ms": 1320.0,
        "queued_ms": 20.0,
        "model_ms": 180.0,
        "tools_ms": 50.0,
        "human_ms": 1000.0,
        "overhead_ms": 70.0,
    }


def test_overlapping_steps_count_once_for_the_first_of_human_tools_model() -> None:
    spans = [
        model(0, 100),  # two branches at once
        model(30, 150),
        tool(100, ran_from=100, ran_ms=200),  # 100..300, overlaps the wait
        wait(150, 250),
    ]
    split = wall_time(at(0), at(0), at(400), spans)
    assert split["human_ms"] == 100.0
    assert split["tools_ms"] == 50.0 + 50.0  # 100..150 and 250..300
    assert split["model_ms"] == 100.0  # 0..100; 100..150 is the tool's
    assert split["overhead_ms"] == 100.0


def test_a_wait_still_open_lasts_until_the_run_ended() -> None:
    split = wall_time(at(0), at(5), at(2005), [wait(5, None)])
    assert (split["human_ms"], split["tools_ms"], split["overhead_ms"]) == (2000.0, 0.0, 0.0)


@pytest.mark.parametrize("started", [None, 50])
def test_the_parts_add_up_to_the_wall_time(started: float | None) -> None:
    spans = [model(-460, 40), tool(40, ran_from=80, ran_ms=10)]  # begins before the run did
    split = wall_time(at(0), None if started is None else at(started), at(100), spans)
    parts = sum(v for k, v in split.items() if k != "total_ms")
    assert parts == pytest.approx(split["total_ms"]) == pytest.approx(100.0)
