"""A run waiting for its model's rate limit, in Chromium: the timeline shows an open
"Waiting for the rate limit" row and the waterfall an open wait span while it waits;
cancelling ends the wait at once, and both show it closed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403
from tests.e2e.browser import Api, screenshot
from tests.e2e.test_pages_live import open_timeline, send, wait_for_run_end
from tests.e2e.test_pages_waterfall import open_waterfall
from tests.support.daphne_server import DaphneServer, daphne_server


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    # Windows of an hour, waited for up to two: only a cancel ends the wait in the test.
    data = tmp_path_factory.mktemp("studio") / "data"
    env = {"STUDIO_RATE_WINDOW_S": "3600", "STUDIO_RATE_MAX_WAIT_S": "7200"}
    with daphne_server(data, env, template=seeded_data) as server:
        yield server


def test_a_wait_for_the_rate_limit_is_shown_open_and_closes_when_cancelled(
    page: Page, api: Api
) -> None:
    body = {"name": "limited", "provider": "scripted", "requests_per_minute": 1}
    api.post("/api/models/", body | {"options": {"script": [{"text": "hi"}], "loop": True}})
    agent = api.agent({"name": "patient", "model": "limited", "instruction": "Say hi."})["id"]
    first = api.post("/api/sessions/", {"agent": agent})
    assert wait_for_run_end(api, send(api, first["id"], "hi")["id"])["status"] == "succeeded"
    session = api.post("/api/sessions/", {"agent": agent})["id"]

    open_timeline(page, session)
    run = send(api, session, "hi again")
    waiting = page.locator(".ev.rate_limit_waiting")
    expect(waiting).to_contain_text("Waiting for the rate limit")
    expect(waiting).to_contain_text("waiting for the rate limit of limited")
    expect(waiting.locator(".wait-state")).to_have_text("waiting…")
    screenshot(page, "timeline-rate-limit-waiting")

    open_waterfall(page, session)
    span = page.locator(".wf-span[data-kind=wait]")
    expect(span).to_have_attribute("data-status", "open")
    expect(span.locator(".wf-bar.open")).to_be_visible()
    screenshot(page, "waterfall-rate-limit-waiting")
    page.uncheck("input[name=kind][value=tool]")  # a filter on: waits still show
    expect(span).to_be_visible()
    page.uncheck("input[name=kind][value=human]")
    expect(span).to_be_hidden()
    page.check("input[name=kind][value=human]")

    api.post(f"/api/runs/{run['id']}/cancel/")
    expect(span).to_have_attribute("data-status", "error")
    expect(page.locator(".wf-bar.open")).to_have_count(0)
    assert wait_for_run_end(api, run["id"])["status"] == "cancelled"
    open_timeline(page, session)
    expect(waiting).to_contain_text("Stopped waiting for the rate limit")
    expect(waiting.locator(".wait-state")).to_have_text("stopped")
