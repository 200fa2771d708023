"""OTLP ingest in a real browser: an agent built elsewhere (``tests/support/otel_agent.py``,
traced with the OpenTelemetry SDK) exports its spans to a real Daphne over a few
seconds while the session's timeline and waterfall are open; both draw the spans as
they arrive, and the run ends when the agent's root span does. The span detail shows
the attributes Studio did not map."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows
from tests.e2e.test_pages_waterfall import assert_page_store_matches_the_api
from tests.support.daphne_server import DaphneServer
from tests.support.otel_agent import make_ingest_token, start_agent
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of


def wait_for_session(api: Api, agent: str, within: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        listed = api.get("/api/sessions/?page_size=100")
        rows = listed["results"] if isinstance(listed, dict) else listed
        found = [r for r in rows if r.get("external_agent") == agent]
        if found:
            return dict(found[0])
        time.sleep(0.1)
    raise AssertionError("the ingested session never appeared")


def assert_one_agent_step_named(page: Page, agent: str) -> None:
    """The agent's step, opened under the service's name before its root span came, is
    named by it and ended with it: one step, its duration shown, no separate end row."""
    steps = page.locator("#timeline .step")
    expect(steps).to_have_count(1)
    expect(steps).to_have_attribute("data-agent", agent)
    expect(steps.locator(".step-head .agent")).to_have_text(agent)
    expect(steps.locator(".step-head .chip").first).to_have_text(
        re.compile(r"^[\d.:]+ (ms|s|min)$")
    )
    expect(page.locator("#timeline .ev.agent_end")).to_have_count(0)


def test_an_external_agent_s_spans_appear_live_in_the_timeline_and_the_waterfall(
    context: BrowserContext, page: Page, api: Api, pages_server: DaphneServer, tmp_path: Path
) -> None:
    token = make_ingest_token(pages_server, "demo")
    agent = start_agent(pages_server.url, token, steps=6, delay=0.3, gate=tmp_path)
    try:
        session = wait_for_session(api, "otel-test-agent")
        page.goto(f"/sessions/{session['id']}/")
        waterfall = context.new_page()
        waterfall.goto(f"/sessions/{session['id']}/waterfall/")
        expect(page.locator("#timeline [data-seq]").first).to_be_visible()
        seen_at_open = len(timeline_rows(page))
        bars_at_open = waterfall.locator(".wf-span").count()
        # The agent's next rounds export while both pages are open: they draw them live.
        for step in (1, 2):
            (tmp_path / f"go-{step}").touch()
            expect(
                page.locator("#timeline [data-seq]").nth(seen_at_open + 2 * step)
            ).to_be_attached()
            expect(waterfall.locator(".wf-span").nth(bars_at_open + 2 * step - 1)).to_be_attached()
        expect(page.locator("#run-state")).to_have_text("running")
        expect(page.locator("#cancel-run")).to_be_hidden()  # it runs elsewhere
        expect(page.locator("#pause-run")).to_be_hidden()
        screenshot(page, "otlp-ingest-timeline-live")
        screenshot(waterfall, "otlp-ingest-waterfall-live")
        assert agent.poll() is None  # held at round 3: still running
        # The root has not come: an open agent span stands for it, named by the service.
        expect(waterfall.locator(".wf-span[data-kind=agent][data-status=open]")).to_have_count(1)
        expect(waterfall.locator(".wf-span[data-kind=agent]")).to_have_attribute(
            "data-name", "otel-test-agent"
        )
        expect(waterfall.locator(".wf-run-head .badge")).to_have_text("running")
        for step in range(3, 6):
            (tmp_path / f"go-{step}").touch()
        _out, err = agent.communicate(timeout=60)
        assert agent.returncode == 0, err
    finally:
        if agent.poll() is None:
            agent.kill()
    expect(page.locator("#session-status")).to_have_text("succeeded")
    expect(page.locator("#timeline [data-type=agent_end]")).to_be_attached()
    assert_one_agent_step_named(page, "weather_bot")  # live: the root named it as it came
    rows = timeline_rows(page)
    kinds = [kind for _, kind in rows]
    assert kinds.count("tool_response") == 6 and kinds.count("agent_end") == 1
    stored = [(e["seq"], e["type"]) for e in api.events(session["id"])]
    assert rows == stored
    page.reload()  # the header was drawn before the root span named the agent
    expect(page.get_by_test_id("ingested-from")).to_contain_text("weather_bot")
    assert_one_agent_step_named(page, "weather_bot")
    # It ran elsewhere: nothing here forks, replays or resumes it (the API refuses too).
    expect(page.locator("#timeline [data-seq]").first).to_be_visible()
    expect(page.locator("#timeline button.fork-here")).to_have_count(0)
    expect(page.locator("#replay-run")).to_have_count(0)
    expect(page.locator("#resume-bar")).to_be_hidden()
    screenshot(page, "otlp-ingest-timeline-done", full_page=True)

    # The waterfall: the agent's span over six model calls and six tool calls.
    expect(waterfall.locator(".wf-span[data-status=open]")).to_have_count(0)
    expect(waterfall.locator(".wf-span[data-kind=agent]")).to_have_count(1)
    expect(waterfall.locator(".wf-span[data-kind=agent]")).to_have_attribute(
        "data-name", "weather_bot"
    )
    expect(waterfall.locator(".wf-span[data-kind=tool]")).to_have_count(6)
    expect(waterfall.locator(".wf-span[data-kind=model]")).to_have_count(6)
    # The page's span mechanics (lib/spans.js) give the spans API's spans exactly.
    assert_page_store_matches_the_api(waterfall, api, session["id"])
    waterfall.locator(".wf-span[data-kind=model]").first.click()
    detail = waterfall.get_by_test_id("otel-attributes")
    expect(detail).to_contain_text("weather.custom_flag")
    expect(detail).to_contain_text("otel-test-agent")
    screenshot(waterfall, "otlp-ingest-waterfall-detail")
    waterfall.set_viewport_size({"width": 390, "height": 844})
    screenshot(waterfall, "otlp-ingest-waterfall-phone")


def test_the_trace_ingest_page_makes_a_token_shown_once(page: Page) -> None:
    page.goto("/settings/trace-ingest/")
    expect(page.get_by_test_id("otlp-endpoint")).to_contain_text("/v1/traces")
    page.get_by_test_id("ingest-token-name").fill("my LangGraph agent")
    page.get_by_role("button", name="Create token").click()
    value = page.get_by_test_id("ingest-token-value").inner_text()
    assert value.startswith("sotlp_")
    screenshot(page, "otlp-ingest-tokens")
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "otlp-ingest-tokens-phone", full_page=True)
    page.goto("/settings/trace-ingest/")
    assert value not in page.content()
    expect(page.locator("[data-ingest-token='my LangGraph agent']")).to_be_visible()


def send_spans(server: DaphneServer, token: str, *specs: Any) -> None:
    sent = urllib.request.Request(
        f"{server.url}/v1/traces",
        data=request_of(*specs).SerializeToString(),
        headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(sent, timeout=10) as answer:
        assert answer.status == 200


def test_a_model_call_and_its_tool_sent_at_once_read_as_one_call_and_its_answer(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    """A model span that names the call it made and the tool span that ran it, in one
    request: the model's message calls the tool (its tokens beside it), the tool's span
    answers it, and nothing reads as an empty reply."""
    root, first, tool, second = agent_trace(new_trace_id())
    root.attributes["gen_ai.agent.name"] = "one-batch-shopper"
    send_spans(pages_server, make_ingest_token(pages_server, "demo"), root, first, tool, second)
    session = wait_for_session(api, "one-batch-shopper")
    page.goto(f"/sessions/{session['id']}/")
    rows = page.locator("#timeline .ev.agent_message")
    expect(rows).to_have_count(2)
    expect(rows.first.locator(".kind")).to_contain_text("calls a tool")
    expect(rows.first).to_contain_text("12 in · 5 out tokens")
    expect(rows.first.locator("details.tool")).to_contain_text("0.5 EUR")
    expect(rows.nth(1)).to_contain_text("An apple costs 0.5 EUR.")
    page.goto(f"/sessions/{session['id']}/waterfall/")
    expect(page.locator(".wf-span[data-kind=tool]")).to_have_count(1)
    assert_page_store_matches_the_api(page, api, session["id"])


def test_a_tool_span_sent_in_the_batch_after_its_models_answers_the_models_call(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    """An exporter sends spans in batches as they end: a tool that runs past one batch
    comes in the next, after the model span that asked for it. The timeline shows the
    model's call once, answered; the waterfall draws the tool's span as the API does.
    Its calls, of a model Studio's price table knows, are priced: each call, the run and
    the session's totals say what they cost."""
    token = make_ingest_token(pages_server, "demo")
    root, first, tool, second = agent_trace(new_trace_id())
    root.attributes["gen_ai.agent.name"] = "batched-shopper"
    for chat in (first, second):
        chat.attributes["gen_ai.response.model"] = "gpt-4o-mini-2024-07-18"
    for batch in ([first], [tool], [second, root]):
        send_spans(pages_server, token, *batch)
    session = wait_for_session(api, "batched-shopper")
    page.goto(f"/sessions/{session['id']}/")
    calls = page.locator("#timeline details.tool")
    expect(calls).to_have_count(1)
    expect(calls.locator(".outcome")).to_contain_text("0.5 EUR")
    expect(page.locator("#timeline")).not_to_contain_text("in doubt")
    assert_one_agent_step_named(page, "batched-shopper")
    # gpt-4o-mini at $0.15 in, $0.60 out a million: 12 x 0.15 + 5 x 0.60 = 4.8, then
    # 20 x 0.15 + 8 x 0.60 = 7.8 millionths of a dollar.
    costs = page.locator("#timeline .chip[data-cost]")
    expect(costs).to_have_text(["$0.0000048", "$0.0000078"])
    [run] = api.get(f"/api/runs/?session={session['id']}")["results"]
    assert (run["cost"], run["cost_complete"]) == ("0.0000126000", True)
    expect(page.locator("#timeline .inv .totals")).to_contain_text("cost $0.000013")
    expect(page.locator("#totals")).to_contain_text("Cost$0.000013")
    screenshot(page, "otlp-ingest-batched-timeline", full_page=True)
    page.goto(f"/sessions/{session['id']}/waterfall/")
    tools = page.locator(".wf-span[data-kind=tool]")
    expect(tools).to_have_count(1)
    expect(tools).to_have_attribute("data-name", "price_of")
    assert_page_store_matches_the_api(page, api, session["id"])


def test_an_agent_s_duration_reads_the_same_in_the_timeline_and_the_waterfall(
    context: BrowserContext, page: Page, api: Api, pages_server: DaphneServer
) -> None:
    """Both pages time a step from its stored times, to the microsecond: a root span
    from 0.9 ms to 604.0 ms took 603.1 ms, "603 ms" in each (read to the millisecond
    first, its end 604 and its start 0, the timeline said "604 ms")."""
    root, first, tool, second = agent_trace(new_trace_id())
    root.attributes["gen_ai.agent.name"] = "timed-shopper"
    root.start_s, root.end_s = 0.0009, 0.604
    first.start_s, first.end_s = 0.001, 0.2
    tool.start_s, tool.end_s = 0.25, 0.3
    second.start_s, second.end_s = 0.35, 0.6
    send_spans(pages_server, make_ingest_token(pages_server, "demo"), root, first, tool, second)
    session = wait_for_session(api, "timed-shopper")
    page.goto(f"/sessions/{session['id']}/")
    assert_one_agent_step_named(page, "timed-shopper")
    expect(page.locator("#timeline .step-head .chip").first).to_have_text("603 ms")
    waterfall = context.new_page()
    waterfall.goto(f"/sessions/{session['id']}/waterfall/")
    expect(waterfall.locator(".wf-span[data-kind=agent] .wf-dur")).to_have_text("603 ms")
