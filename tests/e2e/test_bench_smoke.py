"""The live and page benchmarks still run against real Daphnes and Chromium, in tiny
sizes (no timing is asserted: see bench/)."""

from __future__ import annotations

import socket

import pytest

from tests.support.bench import run_bench


def listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


# A real Daphne (two, or Chromium too) on a machine that may be busy: more than the
# suite's default two minutes, so a slow run is not mistaken for a broken script.
SLOW_S = 300


@pytest.mark.timeout(SLOW_S)
def test_live_fanout_times_every_stored_event_at_every_viewer() -> None:
    args = ("--topology", "inmemory", "--viewers", "1,2", "--runs", "1")

    results = run_bench("live_fanout", *args, timeout_s=SLOW_S - 10)

    assert [r["details"]["samples"] for r in results] == [6, 12]


@pytest.mark.timeout(SLOW_S)
@pytest.mark.skipif(
    not (listening(5432) and listening(6379)), reason="needs PostgreSQL and Redis on loopback"
)
def test_live_fanout_across_two_servers_reports_each_server() -> None:
    args = ("--topology", "redis", "--viewers", "2", "--runs", "1")

    results = run_bench("live_fanout", *args, timeout_s=SLOW_S - 10)

    (result,) = results
    assert set(result["details"]["p99_ms_by_server"]) == {"runs the agent", "other server"}


@pytest.mark.timeout(SLOW_S)
def test_pages_time_the_timeline_and_the_session_list_in_chromium() -> None:
    args = ("--sessions", "12", "--events", "30", "--loads", "1")

    results = run_bench("pages", *args, timeout_s=SLOW_S - 10)

    assert [r["name"] for r in results] == ["pages.timeline", "pages.session_list"]


@pytest.mark.timeout(SLOW_S)
def test_waterfall_times_its_spans_api_first_render_and_live_frames_in_chromium() -> None:
    args = ("--events", "60", "--live-steps", "5", "--loads", "1", "--requests", "2")

    results = run_bench("waterfall", *args, timeout_s=SLOW_S - 10)

    names = [r["name"] for r in results]
    assert names == ["waterfall.spans_api", "waterfall.interactive", "waterfall.live_frames"]
    assert results[0]["details"]["spans"] > 0
    live = results[2]["details"]
    assert live["run_status"] == "succeeded"
    # Each live step stores its message and three tool results: enough events for the
    # run to stream at 50/s and more.
    assert live["events"] >= 5 * (1 + 3)
    assert isinstance(live["events_per_s_met"], bool)
