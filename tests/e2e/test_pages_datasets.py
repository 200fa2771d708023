"""Datasets in the browser: an ADK eval set uploaded on the datasets page shows its cases
(as text), a session's turn is added to that dataset from the session's page (the case
it made shown there, prefilled from what the run did), and the dataset shows it as its
next version, with the older one still readable. Screenshots at 1280 and 390 px."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, until
from tests.e2e.page_checks import OVERFLOW

WIDE = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
EVALSET = Path(__file__).parents[1] / "support" / "evals" / "home_automation.evalset.json"
SET_NAME = "home_automation_agent_light_on_off_set"
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}


def _fits(page: Page) -> None:
    """Nothing sticks out past the window, measured once the page's stylesheet applies:
    after a click that navigates, the new document's rows can be found (and a check
    pass) before its stylesheet has loaded, when no box scrolls and nothing is capped."""
    page.wait_for_load_state("load")
    assert page.evaluate(OVERFLOW) is None


def _calculator_session(api: Api, name: str = "dataset_calc", **options: float) -> str:
    """A new session of a scripted calculator agent (``options``: its model's pace); its id."""
    script = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
        {"text": "It is {last_tool_result}, <b>surely</b>."},
    ]
    api.model(f"{name}-model", script=script, loop=True, **options)
    agent = api.agent({"name": name, "model": f"{name}-model", "tools": [{"name": "calculator"}]})
    return str(api.post("/api/sessions/", {"agent": agent["id"], "title": "Six sevens"})["id"])


def _ran(api: Api) -> str:
    """A session of a scripted calculator agent with one ended turn; its id."""
    session = _calculator_session(api)
    run = api.post(f"/api/sessions/{session}/messages/", {"text": "What is 6 * 7?"})
    until(lambda: api.get(f"/api/runs/{run['id']}/")["status"] in ENDED, "the run ended")
    return session


def test_a_turn_that_ends_while_its_page_is_open_can_be_added_at_once(page: Page, api: Api) -> None:
    session = _calculator_session(api, "slow_calc", latency_s=0.5)  # a turn takes 1 s or more
    page.goto(f"/sessions/{session}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    card = page.get_by_test_id("add-to-dataset")
    expect(card).to_contain_text("Once a run of this session ends")
    expect(page.get_by_test_id("to-add-to-dataset")).to_be_visible()  # from the start

    api.post(f"/api/sessions/{session}/messages/", {"text": "What is 6 * 7?"})
    expect(page.locator("#session-status")).to_have_text("succeeded")
    expect(card.locator("select[name=run] option")).to_have_text([re.compile("What is 6 \\* 7")])

    card.locator("input[name=dataset]").fill("typed before the next turn ended")
    api.post(f"/api/sessions/{session}/messages/", {"text": "And 6 * 8?"})
    expect(card.locator("select[name=run] option")).to_have_count(2)
    expect(card.locator("select[name=run] option").first).to_contain_text("And 6 * 8?")
    expect(card.locator("input[name=dataset]")).to_have_value("typed before the next turn ended")


def test_an_adk_file_uploaded_then_a_sessions_turn_added(page: Page, api: Api) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/datasets/")
    expect(page.locator("nav.topnav a[aria-current=page]")).to_have_text("Datasets")
    screenshot(page, "datasets-list-empty-1280")
    page.locator("#id_file").set_input_files(str(EVALSET))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".alert.success")).to_contain_text(
        f"Imported 3 cases as new dataset {SET_NAME}"
    )
    rows = page.locator("[data-testid=case-table] tbody tr")
    expect(rows).to_have_count(3)
    two_turns = page.locator("tr[data-case=check_then_switch_on]")
    expect(two_turns.locator(".case-turn")).to_have_text(
        ["Is the kitchen light on?", "Switch it on, please."]
    )
    expect(two_turns).to_contain_text("get_device_info")
    expect(two_turns).to_contain_text('"units": "metric"')
    expect(page.get_by_test_id("dataset-version")).to_have_text("v1")
    _fits(page)
    screenshot(page, "dataset-detail-1280", full_page=True)

    session_id = _ran(api)
    page.goto(f"/sessions/{session_id}/")
    page.get_by_test_id("to-add-to-dataset").click()
    card = page.get_by_test_id("add-to-dataset")
    expect(card.locator("select[name=run] option")).to_have_count(1)
    expect(card.locator("select[name=run] option")).to_contain_text("What is 6 * 7?")
    card.locator("input[name=dataset]").fill(SET_NAME)
    card.get_by_role("button", name="Add to dataset").click()
    expect(page.locator(".alert.success")).to_contain_text(
        f"Added case what-is-6-7 to {SET_NAME} (v2)."
    )
    added = page.get_by_test_id("added-case")
    expect(added).to_contain_text("What is 6 * 7?")
    expect(added).to_contain_text("It is 42, <b>surely</b>.")  # the answer, as text
    expect(added).to_contain_text('calculator {"expression": "6 * 7"}')
    expect(page.locator("#add-to-dataset b")).to_have_count(0)
    expect(card.locator("input[name=dataset]")).to_have_value(SET_NAME)  # for the next turn
    added.scroll_into_view_if_needed()
    screenshot(page, "session-add-to-dataset-1280")

    page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    added.scroll_into_view_if_needed()
    _fits(page)
    screenshot(page, "session-add-to-dataset-390")

    added.get_by_role("link", name="Open the case").click()
    expect(page.get_by_test_id("dataset-version")).to_have_text("v2")
    highlighted = page.locator("tr.highlight")
    expect(highlighted).to_have_attribute("data-case", "what-is-6-7")
    expect(highlighted).to_contain_text("It is 42, <b>surely</b>.")
    expect(rows).to_have_count(4)
    _fits(page)
    screenshot(page, "dataset-detail-390", full_page=True)

    page.select_option("#version", "1")
    page.get_by_role("button", name="Show").click()
    expect(page.get_by_test_id("old-version")).to_be_visible()
    expect(rows).to_have_count(3)
    expect(page.get_by_test_id("case-add")).to_have_count(0)

    page.goto("/datasets/")
    expect(page.locator(f"tr[data-dataset={SET_NAME}] [data-testid=dataset-cases]")).to_have_text(
        "4"
    )
    _fits(page)
    screenshot(page, "datasets-list-390", full_page=True)
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    screenshot(page, "datasets-list-1280")
