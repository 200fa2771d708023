"""An agent that asks the user, in Chromium: the question appears with a box for the
answer, the page says the run waits for you, and the answer typed in the playground,
the timeline or the approvals inbox is what the agent goes on with."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot


def booker(api: Api, name: str) -> dict[str, Any]:
    script = [
        {"tool_calls": [{"name": "ask_user", "args": {"question": "Which <b>city</b>?"}}]},
        {"text": "Booked for {last_tool_result}."},
    ]
    api.model(f"{name}_model", script=script, loop=True)
    return api.agent(
        {
            "name": name,
            "model": f"{name}_model",
            "instruction": "Ask where to book.",
            "tools": [{"name": "ask_user"}],
        }
    )


def test_the_playground_asks_and_the_typed_answer_goes_to_the_agent(page: Page, api: Api) -> None:
    agent = booker(api, "booker_chat")
    page.goto(f"/playground/?agent={agent['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.fill("#message", "book me a trip")
    page.keyboard.press("Enter")
    expect(page.locator("#chat-waiting")).to_have_text("Waiting for your answer")
    call = page.locator(".msg.tool[data-tool=ask_user]")
    expect(call.locator(".state")).to_have_text(" · waiting for your answer")
    card = call.locator(".question")
    # The question is text: the markup the model wrote is shown, never run.
    expect(card.locator(".question-text")).to_have_text("Which <b>city</b>?")
    expect(card.locator("b")).to_have_count(0)
    card.get_by_role("button", name="Send answer").click()
    expect(card.get_by_role("status")).to_have_text("Type an answer first.")
    screenshot(page, "playground-question")

    card.get_by_label("Your answer").fill("Lisbon")
    card.get_by_label("Your answer").press("Enter")
    expect(page.locator(".msg.agent .bubble").last).to_have_text("Booked for Lisbon.")
    expect(card).to_contain_text("demo answered: Lisbon")
    expect(card.get_by_label("Your answer")).to_have_count(0)
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)
    expect(page.locator("#chat-waiting")).to_have_text("")


def test_in_the_playground_the_message_box_answers_the_agents_question(
    page: Page, api: Api
) -> None:
    """Typed where a chat takes the next words: while the agent waits for an answer, the
    message box says so and sends what is typed as the answer, not as a new message."""
    agent = booker(api, "booker_composer")
    page.goto(f"/playground/?agent={agent['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    box = page.locator("#message")
    box.fill("book me a trip")
    box.press("Enter")
    card = page.locator(".msg.tool[data-tool=ask_user] .question")
    expect(card.locator(".question-text")).to_be_visible()
    expect(box).to_have_attribute("placeholder", re.compile("^Answer the agent's question"))
    expect(page.locator("#send")).to_be_enabled()
    box.fill("Lisbon")
    box.press("Enter")
    expect(page.locator(".msg.agent .bubble").last).to_have_text("Booked for Lisbon.")
    expect(card).to_contain_text("demo answered: Lisbon")
    expect(box).to_have_value("")
    expect(box).to_have_attribute("placeholder", re.compile("^Message the agent"))
    # One message of the user's: the answer went to the question.
    expect(page.locator(".msg.user")).to_have_count(1)


def test_the_timeline_answers_a_question_and_a_stopped_one_says_so(page: Page, api: Api) -> None:
    agent = booker(api, "booker_timeline")
    session = api.post("/api/sessions/", {"agent": agent["id"], "title": "Trip"})
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    api.post(f"/api/sessions/{session['id']}/messages/", {"text": "book me a trip"})
    call = page.locator(".tool[data-tool=ask_user]")
    expect(call).to_have_attribute("data-state", "waiting")
    expect(call.locator(".chip.state")).to_have_text("waiting for your answer")
    expect(page.locator("#session-status")).to_have_text("waiting for your answer")
    card = call.locator(".question")
    # ask_user waits 15 minutes at most by default, then the agent goes on without.
    expect(card.get_by_test_id("expires")).to_have_text(re.compile(r"^1[45] min left$"))
    card.get_by_label("Your answer").fill("Porto")
    card.get_by_role("button", name="Send answer").click()
    expect(call).to_have_attribute("data-state", "done")
    expect(card).to_contain_text("demo answered: Porto")
    expect(card.get_by_test_id("expires")).to_have_count(0)
    screenshot(page, "timeline-question-answered")
    # The answered run goes on to its end, which the timeline shows by hiding its run
    # bar; a message sent before then is refused (409, a run in progress).
    expect(page.locator("#runbar")).to_be_hidden()

    # A second question, then the run is cancelled: the card closes and says how.
    api.post(f"/api/sessions/{session['id']}/messages/", {"text": "and a hotel"})
    second = page.locator(".tool[data-tool=ask_user]").nth(1)
    expect(second).to_have_attribute("data-state", "waiting")
    page.get_by_role("button", name="Cancel run").click()
    expect(second).to_have_attribute("data-state", "not_run")
    expect(second.locator(".question").get_by_label("Your answer")).to_have_count(0)
    expect(second.locator(".question")).to_contain_text("cancelled")
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)


def test_the_approvals_page_lists_questions_live_and_answers_them_in_place(
    page: Page, api: Api
) -> None:
    agent = booker(api, "booker_inbox")
    page.goto("/approvals/")
    expect(page.locator("body")).to_have_attribute("data-ready", "approvals")
    expect(page.get_by_test_id("questions")).to_be_hidden()
    first = api.post("/api/sessions/", {"agent": agent["id"], "title": "Inbox trip"})
    api.post(f"/api/sessions/{first['id']}/messages/", {"text": "book me a trip"})
    rows = page.get_by_test_id("question-row")
    expect(rows).to_have_count(1)  # arrived live, over the inbox socket
    expect(page.locator("#approvals-badge")).to_have_attribute("data-count", "1")
    row = rows.filter(has_text="Inbox trip")
    expect(row).to_contain_text("booker_inbox")
    expect(row.locator(".question-text")).to_have_text("Which <b>city</b>?")  # text, not HTML
    expect(row.locator("b")).to_have_count(0)
    expect(page.get_by_test_id("inbox-empty")).to_be_visible()  # no call waits for a decision
    # It waits 15 minutes at most (ask_user's default), then the agent goes on without.
    expect(row.get_by_test_id("expires")).to_have_text(re.compile(r"^1[45] min left$"))

    # An answer being typed stays while another question arrives and the list is redrawn.
    box = row.get_by_label("Your answer")
    box.fill("Oslo")
    second = api.post("/api/sessions/", {"agent": agent["id"], "title": "Second trip"})
    api.post(f"/api/sessions/{second['id']}/messages/", {"text": "book me a trip"})
    expect(rows).to_have_count(2)
    expect(page.locator("#approvals-badge")).to_have_attribute("data-count", "2")
    expect(box).to_have_value("Oslo")
    screenshot(page, "approvals-question")
    box.press("Enter")
    expect(page.get_by_role("status")).to_have_text("Answer sent; the agent goes on with it.")
    expect(rows).to_have_count(1)
    expect(rows.filter(has_text="Second trip")).to_have_count(1)
    expect(page.locator("#approvals-badge")).to_have_attribute("data-count", "1")

    # The session it was asked in shows who answered what, and the agent's reply to it.
    page.goto(f"/sessions/{first['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    card = page.locator(".tool[data-tool=ask_user] .question")
    expect(card).to_contain_text("demo answered: Oslo")
    expect(page.get_by_text("Booked for Oslo.")).to_be_visible()

    # The other is answered in its session, which the inbox links to.
    page.go_back()
    expect(page.locator("body")).to_have_attribute("data-ready", "approvals")
    rows.get_by_test_id("question-session").click()
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    card = page.locator(".tool[data-tool=ask_user] .question")
    card.get_by_label("Your answer").fill("Bergen")
    card.get_by_role("button", name="Send answer").click()
    expect(card).to_contain_text("demo answered: Bergen")
    page.goto("/approvals/")
    expect(page.get_by_test_id("questions")).to_be_hidden()
    expect(page.locator("#approvals-badge")).to_have_attribute("data-count", "0")
