"""Comparing runs in the browser: one agent run twice with different scripted answers,
two sessions ticked in the session list and compared, the changed steps side by side
(model output as text); and from a session page, "Compare with…" another run."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.page_checks import Visit, look_at
from tests.support.daphne_server import DaphneServer

WIDE = {"width": 1280, "height": 900}
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
QUESTION = "What do 2 and 3 make?"


def script(expression: str, answer: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "calculator", "args": {"expression": expression}}]},
        {"text": answer},
    ]


def run_once(api: Api, agent_id: str, title: str) -> dict[str, Any]:
    session = api.post("/api/sessions/", {"agent": agent_id, "title": title})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": QUESTION})
    deadline = time.monotonic() + 30
    while (run := api.get(f"/api/runs/{run['id']}/"))["status"] not in ENDED:
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
    assert run["status"] == "succeeded", run
    return {"session": session["id"], "run": run["id"]}


def two_runs(api: Api, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Agent ``name`` twice on the same question, its model scripted otherwise the second
    time."""
    model = api.model(f"{name}_model", script=script("2 + 3", "2 and 3 make {last_tool_result}."))
    spec = {"name": name, "model": f"{name}_model", "tools": [{"name": "calculator"}]}
    agent = api.agent(spec)
    first = run_once(api, agent["id"], "Adding")
    answer = "Multiplied, 2 and 3 make {last_tool_result}. <b>Sure</b>."
    api.patch(f"/api/models/{model['id']}/", {"options": {"script": script("2 * 3", answer)}})
    second = run_once(api, agent["id"], "Multiplying")
    return first, second


def test_two_runs_ticked_in_the_session_list_compare_step_by_step(
    page: Page, api: Api, context: BrowserContext, pages_server: DaphneServer
) -> None:
    first, second = two_runs(api, "adder")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/sessions/")
    for ids in (first, second):
        page.locator(f"tr[data-session='{ids['session']}'] input[name=session]").check()
    screenshot(page, "compare-session-list")
    page.get_by_test_id("compare-sessions").click()
    page.wait_for_url(f"**/compare/?a={first['run']}&b={second['run']}")

    rows = page.get_by_test_id("step-row")
    expect(rows).to_have_count(4)
    statuses = rows.evaluate_all("els => els.map(e => e.dataset.status)")
    assert statuses == ["same", "same", "changed", "changed"]
    tool = rows.nth(2)
    expect(tool).to_contain_text("Tool call · calculator")
    changes = tool.get_by_test_id("change")
    expect(changes.nth(0)).to_contain_text("args.expression")
    expect(changes.nth(0).locator("del")).to_have_text("+")
    expect(changes.nth(0).locator("ins")).to_have_text("*")
    expect(changes.nth(1)).to_contain_text("result")
    answer = page.get_by_test_id("answer-diff")
    expect(answer.locator("ins").first).to_have_text("Multiplied, ")
    expect(answer).to_contain_text("<b>Sure</b>")  # the model's markup, as text
    expect(page.locator(".cmp-words b, .cmp-text b")).to_have_count(0)
    figures = page.get_by_test_id("compare-figures")
    expect(figures.locator("tr", has_text="Tool calls")).to_contain_text("±0")
    expect(figures.locator("tr", has_text="Cost")).to_contain_text("$")
    screenshot(page, "compare-runs", full_page=True)

    # Identical steps unfold to show what both said.
    same = rows.nth(0).locator("details.cmp-same").first
    same.locator("summary").click()
    expect(same.locator(".cmp-text")).to_have_text(QUESTION)
    # No console error, nothing wider than a phone, a tablet or a laptop.
    visit = Visit(page.url.removeprefix(pages_server.url), "compare")
    assert look_at(context, pages_server.url, visit, "demo") == []


def test_compare_with_from_a_session_page_picks_the_other_run(page: Page, api: Api) -> None:
    first, second = two_runs(api, "multiplier")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{second['session']}/")
    # Settled first (as the other timeline tests do): the backlog drawn, the socket live.
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    page.get_by_test_id("compare-with").click()
    page.wait_for_url(f"**/compare/?a={second['run']}")
    expect(page.get_by_test_id("compare-empty")).to_contain_text("Compare with…")
    expect(page.locator("#pick-a")).to_have_value(second["run"])
    page.locator("#pick-b").select_option(first["run"])
    screenshot(page, "compare-picker")
    page.get_by_role("button", name="Compare", exact=True).click()
    page.wait_for_url(f"**/compare/?a={second['run']}&b={first['run']}")
    expect(page.get_by_test_id("run-a")).to_contain_text("Multiplying")
    expect(page.get_by_test_id("run-b")).to_contain_text("Adding")
    expect(page.locator("[data-testid=step-row][data-status=changed]")).to_have_count(2)
    page.get_by_test_id("swap").click()
    page.wait_for_url(f"**/compare/?a={first['run']}&b={second['run']}")
    expect(page.get_by_test_id("run-a")).to_contain_text("Adding")
