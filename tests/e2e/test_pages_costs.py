"""Costs in Chromium: the demo's scripted model has its made-up price on the model page,
and each model message in the timeline shows what it cost, as the API stored it."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.test_pages_live import open_timeline, send, wait_for_run_end


def test_the_timeline_shows_each_model_calls_stored_cost(page: Page, api: Api) -> None:
    spec = {"name": "pricey", "model": "scripted", "instruction": "Reply: hello there"}
    session = api.post("/api/sessions/", {"agent": api.agent(spec)["id"]})
    run = wait_for_run_end(api, send(api, session["id"], "hi")["id"])
    assert run["status"] == "succeeded" and run["cost_complete"] is True
    events = api.events(session["id"])
    costs = [e["cost"]["amount"] for e in events if e["type"] == "agent_message" and e["cost"]]
    assert costs

    open_timeline(page, session["id"])
    chip = page.locator(".chip[data-cost]")
    expect(chip).to_have_count(len(costs))
    expect(chip.first).to_have_attribute("data-cost", costs[0])
    expect(chip.first).to_have_text(re.compile(r"^\$0\.0*[1-9]\d$"))
    screenshot(page, "timeline-cost")


def test_the_model_page_shows_the_demo_models_made_up_price(page: Page, api: Api) -> None:
    configs = api.get("/api/models/")
    configs = configs["results"] if isinstance(configs, dict) else configs
    scripted = next(c for c in configs if c["name"] == "scripted")
    page.goto(f"/models/{scripted['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "models")
    expect(page.locator("#m-price_input")).to_have_value("1")
    expect(page.locator("#m-price_output")).to_have_value("4")
    page.fill("#m-price_output", "-2")
    page.click("button[type=submit] >> text=Save")
    expect(page.locator("[data-field=price_output] .field-error")).to_contain_text("0")


def test_the_session_list_shows_and_sorts_by_each_sessions_cost(page: Page, api: Api) -> None:
    spec = {"name": "listed", "model": "scripted", "instruction": "Reply: hello there"}
    agent = api.agent(spec)["id"]
    session = api.post("/api/sessions/", {"agent": agent, "title": "costly one"})
    run = wait_for_run_end(api, send(api, session["id"], "hi")["id"])
    api.post("/api/sessions/", {"agent": agent, "title": "never ran"})
    stored = api.get(f"/api/sessions/{session['id']}/")
    assert stored["cost"] == run["cost"] and stored["cost_currency"] == "USD"

    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto("/sessions/")
    row = page.locator(f"tr[data-session='{session['id']}']")
    expect(row.get_by_test_id("cost")).to_have_text(re.compile(r"^\$0\.0*[1-9]\d$"))
    page.get_by_test_id("sort-cost").click()
    expect(page.locator("th[aria-sort=descending]")).to_have_count(1)
    expect(page.locator("tbody tr").first).to_have_attribute("data-session", session["id"])
    page.wait_for_load_state("load")  # the sort link navigated: measure with the stylesheet
    fits = "t => t.scrollWidth <= t.parentElement.clientWidth"  # nothing clipped by its card
    assert page.get_by_test_id("session-table").evaluate(fits)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    screenshot(page, "session-list-cost")
