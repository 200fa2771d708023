"""The playground in Chromium when a tool call waits for a person: approved with edited
arguments, its line shows what ran (the proposed arguments a click away); cancelled
while it waits, nothing says it is running and the card says how the run ended."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot


def careful_agent(api: Api, name: str) -> dict[str, Any]:
    return api.agent(
        {
            "name": name,
            "model": "scripted",
            "instruction": "Use the calculator.\nResult: Approved answer: {last_tool_result}",
            "tools": [{"name": "calculator", "requires_approval": True}],
        }
    )


def ask(page: Page, agent: dict[str, Any], text: str) -> None:
    page.goto(f"/playground/?agent={agent['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.fill("#message", text)
    page.keyboard.press("Enter")
    expect(page.locator("#chat-waiting")).to_have_text("Waiting for your approval")


def test_approving_with_edits_in_the_playground_shows_the_arguments_that_ran(
    page: Page, api: Api
) -> None:
    ask(page, careful_agent(api, "careful_edit_chat"), "what is 10 / 4")
    call = page.locator(".msg.tool[data-tool=calculator]")
    expect(call.locator(".state")).to_have_text(" · waiting for approval")
    card = call.locator(".approval")
    # Denied if nobody decides within the spec's default 300 s: the card counts down.
    expect(card.get_by_test_id("expires")).to_have_text(re.compile(r"^auto-deny in [45] min$"))
    card.get_by_role("button", name="Edit arguments").click()
    card.locator("textarea").fill('{"expression": "10 / 5"}')
    card.get_by_role("button", name="Approve with edits").click()

    expect(page.locator(".msg.agent .bubble").last).to_have_text("Approved answer: 2")
    expect(card).to_contain_text("Approved with edits by demo")
    expect(card.get_by_test_id("expires")).to_have_count(0)  # decided: nothing counts down
    expect(call.locator(".bubble > .args")).to_have_text('{"expression":"10 / 5"}')
    expect(call.locator(".chip.edited")).to_have_text("edited")
    expect(call.locator(".result-line")).to_have_text("⚙ calculator → 2")
    # The proposed arguments are one click away, not only in a tooltip.
    proposed = call.locator(".proposed")
    expect(proposed.locator("pre")).to_be_hidden()
    proposed.get_by_text("Proposed arguments").click()
    expect(proposed.locator("pre")).to_be_visible()
    expect(proposed.locator("pre")).to_contain_text('"expression": "10 / 4"')
    expect(call.locator(".bubble").first).not_to_contain_text("10 / 4 →")
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)
    screenshot(page, "playground-approved-with-edits")


def test_cancelling_in_the_playground_while_a_call_waits_leaves_nothing_running(
    page: Page, api: Api
) -> None:
    ask(page, careful_agent(api, "careful_stop_chat"), "what is 3 * 3")
    call = page.locator(".msg.tool[data-tool=calculator]")
    card = call.locator(".approval")
    expect(card.get_by_role("button", name="Approve")).to_be_visible()

    page.click("#stop")
    expect(page.locator("#stop")).to_be_hidden()
    expect(call).to_have_attribute("data-outcome", "not_run")
    expect(call.locator(".state")).to_have_text(" · not run")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(card.get_by_label("Reason")).to_have_count(0)
    expect(card).to_contain_text(
        "The run was cancelled before a decision was made; the call did not run."
    )
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)
    expect(page.locator("#chat-waiting")).to_have_text("")
    expect(page.locator("#send")).to_be_enabled()
    screenshot(page, "playground-cancelled-while-waiting")
