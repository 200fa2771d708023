"""Issue 18's acceptance, on a real Daphne: kill -9 the server while a tool with side
effects runs, restart it, resume the interrupted run from its last step, and the tool
ran exactly once (counted by the test's own MCP server). Through the API, and through
the timeline's "Resume from last step" button in Chromium."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows, until
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.mcp_server import TALLY, serve_http
from tests.support.openai_server import OpenAIServer, ToolCallReply

# A short lease, so the restarted server recovers the killed one's run at once.
ENV = {"STUDIO_RUN_LEASE_S": "1"}
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
ANSWER = "Tallied once; the second tally may or may not have counted."
_names = itertools.count(1)


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    data = tmp_path_factory.mktemp("studio") / "data"
    with daphne_server(data, ENV, template=seeded_data) as server:
        yield server


@pytest.fixture(scope="module")
def counter_url() -> Iterator[str]:
    with serve_http() as url:
        yield url
        TALLY.release.set()  # no held call outlives the module


@pytest.fixture
def model() -> Iterator[OpenAIServer]:
    """The agent's model, in the test process: its script survives the server's death.
    It calls ``tally`` once, then again with a long hold, and answers the resumed run."""
    TALLY.reset()
    with OpenAIServer(models=["fake-model"]) as server:
        server.reply(tool_calls=[ToolCallReply("tally", {"label": "first"}, id="t1")])
        server.reply(
            tool_calls=[ToolCallReply("tally", {"label": "second", "hold_s": 60}, id="t2")]
        )
        server.reply(ANSWER)
        yield server
        TALLY.release.set()


def tallying_session(api: Api, model: OpenAIServer, counter_url: str) -> str:
    """A new session of an agent on ``model`` that may call the counter's ``tally``."""
    n = next(_names)
    api.post(
        "/api/models/",
        {
            "name": f"remote_{n}",
            "provider": "openai_compatible",
            "model": "fake-model",
            "base_url": model.base_url,
        },
    )
    api.post("/api/mcp-servers/", {"name": f"counter_{n}", "transport": "http", "url": counter_url})
    spec = {
        "name": f"tallier_{n}",
        "model": f"remote_{n}",
        "instruction": "Tally what you are asked to.",
        "mcp": [{"server": f"counter_{n}", "tools": ["tally"]}],
    }
    agent = api.agent(spec)
    return str(api.post("/api/sessions/", {"agent": agent["id"]})["id"])


def kill_while_the_second_tally_runs(server: DaphneServer, api: Api, session_id: str) -> str:
    """Start the run, kill -9 the server once the held ``tally`` call started (its
    ``tool_started`` journalled, the counter reached), restart it; the run's id once the
    restarted server recovered it as interrupted."""
    run = api.post(f"/api/sessions/{session_id}/messages/", {"text": "tally twice"})

    def second_started() -> bool:
        started = [e for e in api.events(session_id) if e["type"] == "tool_started"]
        journalled = any(p.get("call_id") == "t2" for e in started for p in e["parts"])
        return journalled and TALLY.labels == ["first", "second"]

    until(second_started, "journalled and started the second tally")
    server.kill()  # no shutdown code runs: the restarted server recovers the run
    server.restart()
    fresh = Api(server.url)
    until(lambda: fresh.get(f"/api/runs/{run['id']}/")["status"] in ENDED, "recovered")
    assert fresh.get(f"/api/runs/{run['id']}/")["status"] == "interrupted"
    return str(run["id"])


def check_the_record(api: Api, session_id: str, interrupted: str, resumed: dict[str, Any]) -> None:
    """The session's events: the interrupted run's, its in-doubt call closed, then the
    resumed run's, which stored no user message and ran no tool."""
    stored = api.events(session_id)
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    first = api.get(f"/api/runs/{interrupted}/")
    by_run: dict[str, list[str]] = {}
    for event in stored:
        run = resumed if event["invocation_id"] == resumed["invocation_id"] else first
        assert event["invocation_id"] in (first["invocation_id"], resumed["invocation_id"])
        by_run.setdefault(run["id"], []).append(event["type"])
    assert by_run[interrupted][0] == "user_message"
    assert by_run[interrupted][-2:] == ["tool_response", "error"]
    assert by_run[resumed["id"]] == ["agent_start", "agent_message", "agent_end"]
    responses = {
        p["call_id"]: p["result"]
        for e in stored
        if e["type"] == "tool_response"
        for p in e["parts"]
    }
    assert responses["t1"] == "tallied first"
    assert responses["t2"].startswith("in_doubt:")
    assert stored[-2]["parts"][0]["text"] == ANSWER


def test_a_run_killed_mid_tool_resumes_from_its_last_step_and_no_tool_runs_twice(
    pages_server: DaphneServer, api: Api, model: OpenAIServer, counter_url: str
) -> None:
    session_id = tallying_session(api, model, counter_url)
    interrupted = kill_while_the_second_tally_runs(pages_server, api, session_id)
    fresh = Api(pages_server.url)

    resumed = fresh.post(f"/api/runs/{interrupted}/resume-from-last-step/")
    assert (resumed["resumed_from"], resumed["message"]) == (interrupted, "")
    until(lambda: fresh.get(f"/api/runs/{resumed['id']}/")["status"] in ENDED, "ended")
    ended = fresh.get(f"/api/runs/{resumed['id']}/")
    assert ended["status"] == "succeeded", ended["error_message"]

    assert TALLY.labels == ["first", "second"]  # each tally ran once: none again
    check_the_record(fresh, session_id, interrupted, ended)
    # The model's last request read the record: one user message, both results.
    last = model.requests[-1].messages
    assert [m["content"] for m in last if m["role"] == "user"] == ["tally twice"]
    tools = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    assert tools["t1"] == "tallied first" and "in_doubt" in tools["t2"]


def test_the_timeline_resumes_an_interrupted_run_with_its_button(
    page: Page, pages_server: DaphneServer, api: Api, model: OpenAIServer, counter_url: str
) -> None:
    session_id = tallying_session(api, model, counter_url)
    page.goto(f"/sessions/{session_id}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    interrupted = kill_while_the_second_tally_runs(pages_server, api, session_id)

    bar = page.locator("#resume-bar")
    expect(bar).to_be_visible(timeout=20_000)  # the page reconnected to the new server
    expect(page.locator("#session-status")).to_have_text("interrupted")
    screenshot(page, "timeline-interrupted-resume")
    bar.get_by_role("button", name="Resume from last step").click()

    expect(page.locator("#session-status")).to_have_text("succeeded")
    expect(bar).to_be_hidden()
    fresh = Api(pages_server.url)
    [resumed] = [
        r for r in fresh.get(f"/api/runs/?session={session_id}")["results"] if r["resumed_from"]
    ]
    assert resumed["resumed_from"] == interrupted
    group = page.locator(f"details.inv[data-invocation='{resumed['invocation_id']}']")
    expect(group.locator(".inv-title")).to_contain_text(f"Resumed from run {interrupted[:8]}")
    link = group.locator(".inv-title a.inv-resumed-from")
    first = fresh.get(f"/api/runs/{interrupted}/")
    expect(link).to_have_attribute("href", f"#inv-{first['invocation_id']}")
    earlier = page.locator(f"details.inv[data-invocation='{first['invocation_id']}']")
    expect(earlier.locator(".inv-title a.inv-resumed-as")).to_have_text(f"run {resumed['id'][:8]}")
    screenshot(page, "timeline-resumed")

    assert TALLY.labels == ["first", "second"]
    check_the_record(fresh, session_id, interrupted, fresh.get(f"/api/runs/{resumed['id']}/"))
    stored = fresh.events(session_id)
    shown = [(e["seq"], e["type"]) for e in stored if e["type"] != "tool_started"]
    assert timeline_rows(page) == shown  # the journal shows on its call's own row
    page.reload()  # the same from the record alone
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(group.locator(".inv-title")).to_contain_text(f"Resumed from run {interrupted[:8]}")
    expect(bar).to_be_hidden()


def test_the_playground_resumes_an_interrupted_run_with_its_button(
    page: Page, pages_server: DaphneServer, api: Api, model: OpenAIServer, counter_url: str
) -> None:
    session_id = tallying_session(api, model, counter_url)
    page.goto(f"/playground/?session={session_id}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    interrupted = kill_while_the_second_tally_runs(pages_server, api, session_id)

    button = page.get_by_role("button", name="Resume from last step")
    expect(button).to_be_visible(timeout=20_000)  # the page reconnected to the new server
    button.click()

    note = page.locator(".msg.resumed[data-resumed-run]")
    expect(note).to_contain_text(f"Going on from run {interrupted[:8]} at its last completed step")
    expect(page.locator(".msg.agent", has_text=ANSWER)).to_be_visible()
    expect(button).to_be_hidden()
    screenshot(page, "playground-resumed")
    assert TALLY.labels == ["first", "second"]
    fresh = Api(pages_server.url)
    [resumed] = [
        r for r in fresh.get(f"/api/runs/?session={session_id}")["results"] if r["resumed_from"]
    ]
    check_the_record(fresh, session_id, interrupted, resumed)
