"""The timeline in Chromium when a run ends some other way than a cancel while one of
its tool calls waits for a person: failed at its wall-time limit, and interrupted by a
server that died. Nothing says "running…" afterwards, live or after a reload, and the
approval card loses its buttons and says how the run ended."""

from __future__ import annotations

import re
import time
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


def expect_still_waiting(page: Page) -> None:
    expect(page.locator("#session-status")).to_have_text("waiting for approval")
    expect(page.locator(".approval").get_by_role("button", name="Approve")).to_be_visible()
    expect(page.locator(".tool[data-tool=calculator] .state")).to_have_text("waiting for approval")


def approve_and_finish(page: Page, api: Api, session_id: str) -> None:
    page.locator(".approval").get_by_role("button", name="Approve").click()
    expect(page.locator("#session-status")).to_have_text("succeeded")
    expect(page.locator("#runbar")).to_be_hidden()
    stored = api.events(session_id)
    assert [e["type"] for e in stored].count("run_parked") == 1
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]


def test_a_parked_run_outlives_its_wall_time_limit_and_goes_on_when_approved(
    page: Page, api: Api
) -> None:
    # The wall-time limit counts executing time: a run parked on a person executes
    # nowhere, so waiting past the limit does not fail it.
    agent = careful_agent(api, "careful_limited", max_wall_time_s=1.5)
    session_id = wait_for_approval(page, api, agent)
    expect(page.locator("#timeline .ev.run_parked")).to_be_visible()
    time.sleep(2.0)  # past the limit, in wall time
    expect_still_waiting(page)
    screenshot(page, "timeline-parked-past-wall-time")
    approve_and_finish(page, api, session_id)


def test_a_parked_run_survives_a_killed_server_and_goes_on_when_approved(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    session_id = wait_for_approval(page, api, careful_agent(api, "careful_killed"))
    expect(page.locator("#timeline .ev.run_parked")).to_be_visible()

    pages_server.kill()  # nothing executes a parked run: nothing is lost
    pages_server.restart()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live", timeout=30_000)
    expect_still_waiting(page)
    screenshot(page, "timeline-parked-after-restart")
    approve_and_finish(page, Api(pages_server.url), session_id)
