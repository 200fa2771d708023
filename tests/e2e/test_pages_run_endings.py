"""The timeline in Chromium when a run ends some other way than a cancel while one of
its tool calls waits for a person: failed at its wall-time limit, and interrupted by a
server that died. Nothing says "running…" afterwards, live or after a reload, and the
approval card loses its buttons and says how the run ended."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows
from tests.support.daphne_server import DaphneServer, daphne_server

# A short lease, so the restarted server recovers the killed one's run at once.
ENV = {"STUDIO_RUN_LEASE_S": "1"}


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    data = tmp_path_factory.mktemp("studio") / "data"
    with daphne_server(data, ENV, template=seeded_data) as server:
        yield server


def careful_agent(api: Api, name: str, **limits: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "model": "scripted",
        "instruction": "Use the calculator.\nResult: Approved answer: {last_tool_result}",
        "tools": [{"name": "calculator", "requires_approval": True}],
    }
    if limits:
        spec["limits"] = limits
    return api.agent(spec)


def wait_for_approval(page: Page, api: Api, agent: dict[str, Any]) -> str:
    session_id = str(api.post("/api/sessions/", {"agent": agent["id"]})["id"])
    page.goto(f"/sessions/{session_id}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "what is 4 * 4"})
    expect(page.locator(".approval").get_by_role("button", name="Approve")).to_be_visible()
    expect(page.locator(".tool[data-tool=calculator] .state")).to_have_text("waiting for approval")
    return session_id


def expect_nothing_running(page: Page, status: str, ending: str) -> None:
    expect(page.locator("#session-status")).to_have_text(status)
    tool = page.locator(".tool[data-tool=calculator]")
    expect(tool.locator(".state")).to_have_text("not run")
    card = page.locator(".approval")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(card.get_by_label("Reason")).to_have_count(0)
    expect(card).to_contain_text(f"{ending} before a decision was made; the call did not run.")
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)
    expect(page.locator(".step.running")).to_have_count(0)
    expect(page.locator("#runbar")).to_be_hidden()


def test_a_run_failing_while_a_call_waits_for_approval_leaves_nothing_running(
    page: Page, api: Api
) -> None:
    agent = careful_agent(api, "careful_limited", max_wall_time_s=1.5)
    session_id = wait_for_approval(page, api, agent)

    expect_nothing_running(page, "failed", "The run failed (limit_exceeded)")
    screenshot(page, "timeline-failed-while-waiting")
    stored = api.events(session_id)
    assert stored[-1]["error"]["code"] == "limit_exceeded"
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]
    page.reload()  # the same from the record alone
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect_nothing_running(page, "failed", "The run failed (limit_exceeded)")


def test_a_run_interrupted_while_a_call_waits_for_approval_leaves_nothing_running(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    session_id = wait_for_approval(page, api, careful_agent(api, "careful_killed"))

    pages_server.kill()  # no shutdown code runs: the restarted server recovers the run
    pages_server.restart()
    expect_nothing_running(page, "interrupted", "The run was interrupted")
    screenshot(page, "timeline-interrupted-while-waiting")
    stored = Api(pages_server.url).events(session_id)
    assert stored[-1]["error"]["code"] == "interrupted"
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect_nothing_running(page, "interrupted", "The run was interrupted")
