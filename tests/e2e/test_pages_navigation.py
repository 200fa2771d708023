"""Finding one's way in Chromium, by clicking as a newcomer would: the home page's
getting-started steps are links that go where they say, a recent session opens in one
click, the timeline's breadcrumb names the session it is on, and the navigation links
the API docs."""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}


def session_with_a_run(api: Api, text: str) -> dict[str, Any]:
    """A session of the demo calculator agent whose one run has ended (polled, bounded)."""
    agent = next(a for a in api.get("/api/agents/")["results"] if a["name"] == "calculator")
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": text})
    deadline = time.monotonic() + 30
    while api.get(f"/api/runs/{run['id']}/")["status"] not in ENDED:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
    return api.get(f"/api/sessions/{session['id']}/")  # type: ignore[no-any-return]


def open_home(page: Page) -> None:
    page.goto("/")
    expect(page.locator("h1")).to_have_text("Welcome, demo")


def test_each_getting_started_step_is_a_link_to_where_it_says(page: Page, api: Api) -> None:
    session = session_with_a_run(api, "what is 2 + 3")
    open_home(page)
    steps = page.get_by_test_id("getting-started").locator("li")
    expect(steps).to_have_count(4)
    expect(steps.locator("a")).to_have_count(4)  # every step, not only some
    screenshot(page, "home-getting-started")
    landing = {
        "Try an agent": ("body", "data-ready", "playground"),
        "Open its timeline": ("body", "data-ready", "timeline"),
        "Build your own": ("body", "data-ready", "builder"),
        "Connect a real model": ("h1", None, "New model"),
    }
    for name, (selector, attribute, value) in landing.items():
        open_home(page)
        page.get_by_test_id("getting-started").get_by_role("link", name=name).click()
        if attribute:
            expect(page.locator(selector)).to_have_attribute(attribute, value)
        else:
            expect(page.locator(selector)).to_contain_text(value)
    # "Open its timeline" opens the newest session's timeline.
    open_home(page)
    page.get_by_role("link", name="Open its timeline").click()
    expect(page).to_have_url(re.compile(f"/sessions/{session['id']}/$"))


def test_a_recent_session_opens_in_one_click_on_a_breadcrumb_naming_it(
    page: Page, api: Api
) -> None:
    session = session_with_a_run(api, "what is 7 * 6")
    assert session["title"] == "what is 7 * 6"
    open_home(page)
    recent = page.get_by_test_id("recent-sessions").locator("a.recent-session").first
    expect(recent.locator(".title")).to_have_text("what is 7 * 6")
    recent.click()

    expect(page).to_have_url(re.compile(f"/sessions/{session['id']}/$"))
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    crumb = page.get_by_test_id("breadcrumb")
    expect(crumb).to_have_text("Sessions / what is 7 * 6")
    expect(crumb.locator("[aria-current=page]")).to_have_text("what is 7 * 6")
    screenshot(page, "timeline-breadcrumb")
    crumb.get_by_role("link", name="Sessions").click()
    expect(page).to_have_url(re.compile("/sessions/$"))


def test_the_navigation_links_the_api_docs(page: Page) -> None:
    open_home(page)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API").click()
    expect(page).to_have_url(re.compile("/api/docs/$"))
    expect(page.locator("#swagger-ui .information-container .title")).to_contain_text("Studio")
