"""The approval inbox in Chromium: three sessions wait on a person; the inbox lists
them live with their arguments as formatted JSON, and the navigation's count follows on
another page; one is approved, one approved with edited arguments (which the tool
receives), one denied with a reason by selecting it; the count goes down live."""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.page_checks import bottoms
from tests.e2e.test_pages_playground_approvals import careful_agent


def start_waiting(api: Api, agent: dict[str, Any], title: str, text: str) -> dict[str, Any]:
    session: dict[str, Any] = api.post("/api/sessions/", {"agent": agent["id"], "title": title})
    api.post(f"/api/sessions/{session['id']}/messages/", {"text": text})
    return session


def tool_results(api: Api, session: dict[str, Any]) -> list[Any]:
    return [
        e["parts"][0]["result"] for e in api.events(session["id"]) if e["type"] == "tool_response"
    ]


def test_the_inbox_decides_three_waiting_sessions_and_the_count_follows_live(
    page: Page, context: BrowserContext, api: Api
) -> None:
    agent = careful_agent(api, "inbox_careful")
    elsewhere = context.new_page()
    elsewhere.goto("/sessions/")
    page.goto("/approvals/")
    expect(page.locator("body")).to_have_attribute("data-ready", "approvals")
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    expect(page.locator("#bulk")).to_be_hidden()  # nothing to select
    badge = page.locator("#approvals-badge")
    expect(badge).to_be_hidden()

    sessions = [start_waiting(api, agent, f"job {n}", f"what is {n} + {n}") for n in (1, 2, 3)]
    rows = page.get_by_test_id("approval-row")
    expect(rows).to_have_count(3)  # arrived live, without a reload
    expect(page.locator("#bulk")).to_be_visible()
    ends = bottoms(page, "#bulk [name=reason]", "[data-testid=approve-selected]")
    assert abs(ends[0] - ends[1]) <= 1, ends  # the reason's box beside its buttons
    expect(badge).to_have_text("3")
    expect(elsewhere.locator("#approvals-badge")).to_have_text("3")
    expect(rows.first.get_by_test_id("approval-args")).to_have_text('{\n  "expression": "1 + 1"\n}')
    expect(rows.first).to_contain_text("inbox_careful")
    expect(rows.first.get_by_test_id("approval-waited")).to_have_text(re.compile(r"^\d+ s$"))
    # Denied if nobody decides within the spec's default 300 s.
    expect(rows.first.get_by_test_id("expires")).to_have_text(
        re.compile(r"^auto-deny in [45] min$")
    )
    screenshot(page, "approval-inbox-three-waiting", full_page=True)

    rows.filter(has_text="job 1").get_by_role("button", name="Approve", exact=True).click()
    expect(rows).to_have_count(2)
    expect(page.locator(".messages")).to_contain_text("1 decided")

    second = rows.filter(has_text="job 2")
    second.get_by_text("Edit arguments").click()
    second.locator("textarea").fill('{"expression": 7}')
    second.get_by_role("button", name="Approve with edits").click()
    expect(page.get_by_text("is not of type 'string'")).to_be_visible()
    expect(rows).to_have_count(2)
    second = rows.filter(has_text="job 2")
    second.get_by_text("Edit arguments").click()
    second.locator("textarea").fill('{"expression": "20 + 22"}')
    second.get_by_role("button", name="Approve with edits").click()
    expect(rows).to_have_count(1)
    expect(elsewhere.locator("#approvals-badge")).to_have_text("1")

    rows.first.get_by_role("checkbox").check()
    page.locator("#bulk input[name=reason]").fill("not today")
    page.get_by_test_id("deny-selected").click()
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    expect(page.locator("#bulk")).to_be_hidden()
    expect(badge).to_be_hidden()
    expect(elsewhere.locator("#approvals-badge")).to_have_attribute("data-count", "0")
    screenshot(page, "approval-inbox-all-decided", full_page=True)

    deadline = time.monotonic() + 10
    while tool_results(api, sessions[1]) != ["42"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tool_results(api, sessions[1]) == ["42"]  # the tool ran with the edited arguments
    decisions = api.get("/api/approvals/decisions/?channel=page")
    by_session = {d["session"]: d for d in decisions}
    assert by_session[sessions[0]["id"]]["decision"] == "approve"
    assert by_session[sessions[1]["id"]]["args_approved"] == {"expression": "20 + 22"}
    assert (by_session[sessions[2]["id"]]["decision"], by_session[sessions[2]["id"]]["reason"]) == (
        "deny",
        "not today",
    )


def test_on_a_phone_the_menu_shows_the_count_and_a_call_is_decided_without_scrolling_sideways(
    page: Page, api: Api
) -> None:
    agent = careful_agent(api, "inbox_phone")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/approvals/")
    expect(page.locator("body")).to_have_attribute("data-ready", "approvals")
    menu_count = page.locator(".menu-toggle .nav-count")
    expect(menu_count).to_be_hidden()  # nothing waits
    session = start_waiting(api, agent, "on the go", "what is 4 + 4")
    row = page.get_by_test_id("approval-row")
    expect(row).to_have_count(1)
    # The navigation is folded behind its button: the button carries the count.
    expect(menu_count).to_have_text("1")
    expect(page.locator("#approvals-badge")).to_be_hidden()
    brand, menu = (page.locator(s).bounding_box() for s in (".brand", ".menu-toggle"))
    assert brand and menu and menu["y"] < brand["y"] + brand["height"], (brand, menu)  # one row
    # The row reads top to bottom: its arguments and its buttons in the phone's window.
    expect(row.get_by_test_id("approval-args")).to_be_in_viewport()
    approve = row.get_by_role("button", name="Approve", exact=True)
    expect(approve).to_be_in_viewport(ratio=1)
    assert page.evaluate("document.querySelector('#inbox').scrollWidth <= innerWidth")
    screenshot(page, "approval-inbox-phone")
    approve.click()
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()
    expect(menu_count).to_be_hidden()
    deadline = time.monotonic() + 10
    while tool_results(api, session) != ["8"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert tool_results(api, session) == ["8"]
