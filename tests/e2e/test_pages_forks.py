"""Forking in the browser: open a session, fork it at a tool result, edit the result,
go on live, and see the fork's timeline (the model read the edited result) and the fork
tree on both sessions' pages."""

from __future__ import annotations

import re
import time

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

WIDE = {"width": 1280, "height": 900}
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
EDITED = "<b>5</b>"


def _run_to_end(api: Api, run_id: str) -> None:
    deadline = time.monotonic() + 30
    while api.get(f"/api/runs/{run_id}/")["status"] not in ENDED:
        assert time.monotonic() < deadline, f"run {run_id} did not end"
        time.sleep(0.1)


def test_fork_at_a_tool_result_edit_it_and_continue(page: Page, api: Api) -> None:
    api.model("fork-calc")  # the demo responder: it answers a tool result with it
    spec = {
        "name": "forker",
        "model": "fork-calc",
        "instruction": "Use the calculator.",
        "tools": [{"name": "calculator"}],
    }
    agent = api.agent(spec)
    session = api.post("/api/sessions/", {"agent": agent["id"], "title": "Sums to fork"})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": "What is 1 + 1?"})
    _run_to_end(api, run["id"])
    [result] = [e for e in api.events(session["id"]) if e["type"] == "tool_response"]
    assert result["parts"][0]["result"] == "2"

    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.locator("#timeline .ev.agent_message").last).to_contain_text("The result is 2.")
    tool_result = page.locator(f'#timeline .result[data-seq="{result["seq"]}"]')
    page.locator(".tool[data-tool=calculator] summary").first.click()
    tool_result.locator("button.fork-here").click()

    dialog = page.locator("dialog.fork-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#fork-edit")).to_have_value("2")
    dialog.locator("#fork-edit").fill(EDITED)
    screenshot(page, "fork-form")
    dialog.locator("#fork-continue").click()

    page.wait_for_url(re.compile(r"/sessions/(?!" + session["id"] + r")[0-9a-f-]+/$"))
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.get_by_test_id("forked-from")).to_contain_text(f"Sums to fork at #{result['seq']}")
    # The model read the edited result, as text; the edited step says it was edited.
    answer = page.locator("#timeline .ev.agent_message").last
    expect(answer).to_contain_text(f"The result is {EDITED}.")
    expect(page.locator("#timeline b")).to_have_count(0)
    edited = page.locator("#timeline .tool[data-tool=calculator] summary .chip.edited")
    expect(edited).to_have_attribute("title", re.compile("it was: 2"))
    expect(page.locator("#session-status")).to_have_text("succeeded")
    tree = page.get_by_test_id("fork-tree")
    expect(tree.locator("li")).to_have_count(2)
    expect(tree.locator("li.current")).to_contain_text(f"fork at #{result['seq']}")
    expect(tree.locator("li").first.locator("a")).to_have_text("Sums to fork")
    screenshot(page, "fork-timeline", full_page=True)

    fork_url = page.url
    # Compare with the original: the same up to the edited result, changed from there.
    page.get_by_test_id("compare-origin").click()
    page.wait_for_url(re.compile(r"/compare/\?a=[0-9a-f-]+&b=[0-9a-f-]+$"))
    rows = page.get_by_test_id("step-row")
    expect(rows.first).to_be_visible()
    statuses = rows.evaluate_all("els => els.map(e => e.dataset.status)")
    changed_at = statuses.index("changed")
    assert set(statuses[:changed_at]) == {"same"} and "same" not in statuses[changed_at:]
    expect(rows.nth(changed_at)).to_contain_text("Tool call · calculator")
    expect(page.get_by_test_id("answer-diff").locator("ins")).to_contain_text(EDITED)
    screenshot(page, "fork-compare", full_page=True)
    page.goto(fork_url)
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")

    fork_id = page.url.rstrip("/").split("/")[-1]
    fork_events = api.events(fork_id)
    assert [e["seq"] for e in fork_events] == list(range(1, len(fork_events) + 1))
    assert fork_events[result["seq"] - 1]["parts"][0]["result"] == EDITED

    page.get_by_test_id("forked-from").locator("a").click()
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    tree = page.get_by_test_id("fork-tree")
    expect(tree.locator("li.current")).to_contain_text("Sums to fork")
    expect(page.get_by_test_id("fork-children")).to_have_text("1 fork of this session")
    expect(page.locator("#timeline .ev.agent_message").last).to_contain_text("The result is 2.")
    screenshot(page, "fork-parent-tree")


def test_a_refused_fork_point_says_why_in_the_form(page: Page, api: Api) -> None:
    api.model("fork-replier")  # its own: the test must not rely on another test's model
    agent = api.agent({"name": "replier", "model": "fork-replier", "instruction": "Reply: hi"})
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": "hello"})
    _run_to_end(api, run["id"])
    [reply] = [e for e in api.events(session["id"]) if e["type"] == "agent_message"]
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    page.locator(f'#timeline .ev[data-seq="{reply["seq"]}"] button.fork-here').click()
    dialog = page.locator("dialog.fork-dialog")
    dialog.locator("#fork-continue").click()  # a reply needs a new message to go on
    expect(dialog.get_by_role("alert")).to_contain_text("Write a message")
    dialog.locator("#fork-message").fill("and again?")
    dialog.locator("#fork-continue").click()
    page.wait_for_url(re.compile(r"/sessions/(?!" + session["id"] + r")[0-9a-f-]+/$"))
    expect(page.locator("#timeline .ev.user_message").last).to_contain_text("and again?")
    expect(page.locator("#session-status")).to_have_text("succeeded")
