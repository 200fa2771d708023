"""Decisions in the waterfall, in a real browser: a tool call a policy rule denied by
itself carries the rule on its span; an approval's wait carries its verdict, who took
it (a person, or the time-out), the reason and the edited arguments, in the row's chip
and tooltip and in the detail panel; all written as text, and the page's span store
still gives exactly the spans API's spans."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.test_pages_waterfall import (
    assert_page_store_matches_the_api,
    ended_run,
    new_session,
    open_waterfall,
    pending_approval,
    row,
)

SHOUTY = "<b>no</b> division"  # a reason that is text, never markup


def careful(api: Api, suffix: str, **approval: Any) -> dict[str, Any]:
    """An agent whose calculator asks a person, under a rule that denies divisions."""
    script = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "8 / 2"}}]},
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
        {"text": "Done: {last_tool_result}"},
    ]
    api.model(f"careful_{suffix}", script=script)
    no_division = {
        "name": "no_division",
        "match": "calculator",
        "action": "deny",
        "priority": 10,
        "when": [{"arg": "expression", "op": "contains", "value": "/"}],
        "reason": SHOUTY,
    }
    spec = {
        "name": f"careful_{suffix}",
        "model": f"careful_{suffix}",
        "instruction": "Work it out.",
        "tools": [{"name": "calculator", "requires_approval": True}],
        "policies": [no_division],
        **({"approval": approval} if approval else {}),
    }
    return api.agent(spec)


def test_the_waterfall_shows_who_decided_each_call_and_why(page: Page, api: Api) -> None:
    session_id = new_session(api, careful(api, "edit"), "decided calls")
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "work it out"})
    asked = pending_approval(api, session_id)
    body = {
        "call_id": asked["call_id"],
        "args_hash": asked["args_hash"],
        "decision": "approve",
        "edited_args": {"expression": "6 * 8"},
        "reason": "eight, not seven",
    }
    api.post(f"/api/sessions/{session_id}/approvals/", body)
    assert ended_run(api, session_id)["status"] == "succeeded"
    open_waterfall(page, session_id)

    # The denied call: the rule on its row, and in its detail.
    denied, approved = row(page, "calculator", "tool").all()
    expect(denied.locator(".wf-chip.policy")).to_have_text("policy: denied")
    assert denied.get_attribute("title").endswith(f"Policy rule no_division denied: {SHOUTY}")
    denied.click()
    detail = page.locator("#wf-detail")
    facts = detail.locator(".wf-facts")
    expect(facts).to_contain_text("Policyrule no_division denied")
    expect(facts).to_contain_text(f"Policy's reason{SHOUTY}")  # as text: no <b> element
    expect(detail.locator("b")).to_have_count(0)

    # The approved call holds its wait: the person, the reason, the edited arguments.
    wait = row(page, "approval", "human")
    expect(wait.locator(".wf-chip.decision")).to_have_text("edited · demo")
    assert wait.get_attribute("title").endswith(
        "Approved with edits by demo (person): eight, not seven"
    )
    expect(approved.locator(".wf-chip.policy")).to_have_count(0)  # asked, not decided by a rule
    wait.click()
    expect(facts).to_contain_text("Decisionapproved with edits by demo (a person)")
    expect(facts).to_contain_text("Reasoneight, not seven")
    sections = detail.locator(".wf-io")
    expect(sections.locator("h3")).to_have_text(
        ["Arguments shown", "Edited arguments (what the tool ran with)"]
    )
    expect(sections.nth(0)).to_contain_text('"expression": "6 * 7"')
    expect(sections.nth(1)).to_contain_text('"expression": "6 * 8"')
    page.set_viewport_size({"width": 1280, "height": 800})
    screenshot(page, "waterfall-decisions")
    assert_page_store_matches_the_api(page, api, session_id)


def test_a_time_out_s_decision_says_so_on_its_wait(page: Page, api: Api) -> None:
    agent = careful(api, "timeout", timeout_s=0.5, on_timeout="deny")
    session_id = new_session(api, agent, "nobody answered")
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "work it out"})
    assert ended_run(api, session_id)["status"] == "succeeded"
    open_waterfall(page, session_id)

    wait = row(page, "approval", "human")
    expect(wait.locator(".wf-chip.decision")).to_have_text("denied · time-out")
    wait.click()
    expect(page.locator("#wf-detail .wf-facts")).to_contain_text(
        "Decisiondenied by the approval's time-out (nobody decided in time)"
    )
    screenshot(page, "waterfall-decision-timeout")
    assert_page_store_matches_the_api(page, api, session_id)
