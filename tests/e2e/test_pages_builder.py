"""The agent builder in Chromium: problems shown once the person touched a field, in
words and one click from the header's count; MCP servers and approvals set in the form;
budgets and compaction checked at their paths; fields in line whatever the length of
their labels, at 1280 and 390 px wide."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from agents_core.specs import NAME_RULE, PREFIX_RULE
from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.support.mcp_server import serve_http

WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}
REGEX = re.compile(r"\^\[|\]\{|\$'|pattern")


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


def open_new(page: Page) -> None:
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")


def spec_in_editor(page: Page) -> dict[str, Any]:
    return json.loads(page.locator("#json-editor").input_value())  # type: ignore[no-any-return]


def test_a_fresh_form_shows_no_problem_until_a_field_is_touched(page: Page) -> None:
    for viewport, name in ((WIDE, "builder-new"), (NARROW, "builder-new-narrow")):
        page.set_viewport_size(viewport)  # type: ignore[arg-type]
        open_new(page)
        expect(page.locator("#validity")).to_have_text("Still to fill in: Name")
        expect(page.locator("#problems-count")).to_be_hidden()
        expect(page.locator("#problems-box")).to_be_hidden()
        expect(page.locator(".field-error")).to_have_count(0)
        screenshot(page, name)

    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.fill("#f-name", "9 lives")
    error = page.locator("[data-field=name] .field-error")
    expect(error).to_have_text(NAME_RULE)
    expect(page.locator("#problems-count")).to_have_text("1 problem")
    assert REGEX.search(page.locator(".builder").inner_text()) is None

    page.click("#problems-count")
    box = page.locator("#problems-box")
    expect(box).to_be_visible()
    expect(page.locator("#problems-count")).to_have_attribute("aria-expanded", "true")
    problem = page.locator("#problems button")
    expect(problem).to_have_count(1)
    expect(problem).to_have_text(f"name{NAME_RULE}")
    expect(problem).to_be_focused()
    screenshot(page, "builder-problems")
    problem.click()
    expect(page.locator("#f-name")).to_be_focused()

    page.fill("#f-name", "lives_9")
    expect(page.locator("#validity")).to_have_text("Valid")
    expect(box).to_be_hidden()
    expect(error).to_have_count(0)


def test_saving_an_untouched_form_lists_what_is_missing(page: Page) -> None:
    open_new(page)
    expect(page.locator("#validity")).to_have_text("Still to fill in: Name")
    page.click("#save")
    expect(page.locator("#problems-box")).to_be_visible()
    expect(page.locator("#problems button")).to_have_text(f"nameRequired. {NAME_RULE}")
    expect(page.locator("[data-field=name] .field-error")).to_have_text(f"Required. {NAME_RULE}")
    expect(page.locator("#problems-count")).to_have_text("1 problem")


def test_mcp_servers_and_approvals_set_in_the_form_are_saved(
    page: Page, api: Api, mcp_url: str
) -> None:
    api.post("/api/mcp-servers/", {"name": "docs", "transport": "http", "url": mcp_url})
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    open_new(page)
    page.fill("#f-name", "librarian")
    page.get_by_role("checkbox", name="docs").check()
    page.get_by_role("button", name="List its tools").click()
    picker = page.locator("[data-field='mcp.0.tools'] .pick-list")
    echo = picker.get_by_role("checkbox", name="echo", exact=True)
    expect(echo).to_be_checked()
    # The server's resources and prompts come as tools of its own, named after it.
    expect(picker.get_by_role("checkbox", name="docs__read_resource")).to_be_checked()
    expect(picker).to_contain_text("Lists its prompts: review(language, code)")
    echo.uncheck()
    page.fill("#f-mcp-0-prefix", "docs ")
    expect(page.locator("[data-field='mcp.0.prefix'] .field-error")).to_have_text(PREFIX_RULE)
    page.fill("#f-mcp-0-prefix", "docs_")
    page.get_by_label("Needs approval").check()
    page.get_by_label("calculator", exact=True).check()
    page.locator("[data-field='tools.0']").get_by_label("Needs approval").check()
    # This tool's own time-out and outcome, over the agent's.
    page.fill("#f-tools-0-approval_timeout_s", "20")
    page.select_option("#f-tools-0-approval_on_timeout", "deny")
    page.fill("#f-approval-timeout_s", "45")
    page.select_option("#f-approval-on_timeout", "approve")
    expect(page.locator("#validity")).to_have_text("Valid")
    expect(page.locator("#tree")).to_contain_text("MCP: docs")

    spec = spec_in_editor(page)
    (ref,) = spec["mcp"]
    assert ref["server"] == "docs" and ref["prefix"] == "docs_"
    assert ref["requires_approval"] is True
    assert "echo" not in ref["tools"] and "add" in ref["tools"]
    assert {"docs__read_resource", "docs__get_prompt"} <= set(ref["tools"])
    own = {"approval_timeout_s": 20, "approval_on_timeout": "deny"}
    assert spec["tools"] == [{"name": "calculator", "requires_approval": True, **own}]
    assert spec["approval"] == {"timeout_s": 45, "on_timeout": "approve"}
    page.evaluate("window.scrollTo(0, document.querySelector('[data-field=mcp]').offsetTop)")
    screenshot(page, "builder-mcp")
    page.set_viewport_size(NARROW)  # type: ignore[arg-type]
    page.locator("[data-field=mcp]").scroll_into_view_if_needed()
    screenshot(page, "builder-mcp-narrow")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]

    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    stored = api.get(f"/api/agents/{agent_id}/")["spec"]
    assert stored["mcp"] == [ref]
    assert stored["approval"] == {"timeout_s": 45.0, "on_timeout": "approve"}
    assert stored["tools"] == [{"name": "calculator", "requires_approval": True, **own}]

    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    expect(page.locator("#f-mcp-0-prefix")).to_have_value("docs_")
    expect(page.locator("#f-mcp-0-requires_approval")).to_be_checked()
    expect(page.locator("#f-approval-timeout_s")).to_have_value("45")
    expect(page.locator("#f-approval-on_timeout")).to_have_value("approve")
    expect(page.locator("#f-tools-0-approval_timeout_s")).to_have_value("20")
    expect(page.locator("#f-tools-0-approval_on_timeout")).to_have_value("deny")
    editor = page.locator("#json-editor")
    edited = {**stored, "approval": {"timeout_s": 90}}
    editor.fill(json.dumps(edited, indent=2))
    editor.blur()
    expect(page.locator("#f-approval-timeout_s")).to_have_value("90")
    expect(page.locator("#f-approval-on_timeout")).to_have_value("")


def test_an_mcp_server_that_is_not_the_owners_is_named_and_removable(page: Page) -> None:
    open_new(page)
    page.fill("#f-name", "stranger")
    editor = page.locator("#json-editor")
    editor.fill(json.dumps({**spec_in_editor(page), "mcp": [{"server": "not_mine"}]}))
    editor.blur()
    item = page.locator("[data-field='mcp.0']")
    expect(item).to_contain_text("Not one of your MCP servers.")
    expect(item.locator(".field-error")).to_contain_text("unknown MCP server 'not_mine'")
    item.get_by_role("button", name="Remove").click()
    expect(page.locator("#validity")).to_have_text("Valid")
    assert "mcp" not in spec_in_editor(page)


# Where each control of the form's grids is, by the grid row and column it is in.
GEOMETRY = """() => [...document.querySelectorAll('.node-form :is(.grid-2, .grid-3)')].map(grid => {
  const columns = getComputedStyle(grid).gridTemplateColumns.split(' ').length;
  const fields = [...grid.children].filter(f => f.matches('.field'));
  return fields.map((f, i) => {
    const control = f.querySelector(':scope > input, :scope > select, :scope > textarea');
    const box = control.getBoundingClientRect();
    const label = f.querySelector('label').getBoundingClientRect().height;
    return {id: control.id, row: Math.floor(i / columns), column: i % columns,
            left: box.left, top: box.top, label};
  });
})"""

# Each control of the form, scrolled to just below the top bar: is it what is there?
COVERED = """() => [...document.querySelectorAll('.node-form :is(input, select)')].filter(c => {
  window.scrollBy(0, c.getBoundingClientRect().top - 120);
  const box = c.getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
  return hit !== c && !c.closest('label')?.contains(hit);
}).map(c => c.id)"""

OVERFLOW = """() => [...document.querySelectorAll('.page *')]
  .filter(el => el.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map(el => el.id || el.className || el.tagName)"""


def test_long_labels_keep_inputs_in_line_at_1280_and_390(page: Page) -> None:
    long_label = "Planner: how the agent plans its steps before it acts on them"
    for viewport in (WIDE, NARROW):
        page.set_viewport_size(viewport)  # type: ignore[arg-type]
        open_new(page)
        page.fill("#f-name", "aligned")
        page.get_by_label("filesystem", exact=True).check()
        page.eval_on_selector(
            "label[for=f-planner]", "(l, text) => { l.textContent = text; }", long_label
        )
        page.evaluate("window.scrollTo(0, document.querySelector('#f-planner').offsetTop - 200)")
        grids = page.evaluate(GEOMETRY)
        assert len(grids) >= 4, grids
        wrapped = False
        for fields in grids:
            for key, edge in (("row", "top"), ("column", "left")):
                groups: dict[int, set[int]] = {}
                for f in fields:
                    groups.setdefault(f[key], set()).add(round(f[edge]))
                assert all(len(edges) == 1 for edges in groups.values()), (viewport, key, fields)
            rows: dict[int, list[float]] = {}
            for f in fields:
                rows.setdefault(f["row"], []).append(f["label"])
            wrapped |= any(max(heights) > min(heights) + 5 for heights in rows.values())
        assert wrapped, "no row had a label longer than its neighbours: the check checked nothing"
        width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1], (viewport, width)
        assert page.evaluate(OVERFLOW) == [], viewport
        assert page.evaluate(COVERED) == [], viewport
        page.evaluate("window.scrollTo(0, document.querySelector('#f-planner').offsetTop - 200)")
        screenshot(page, f"builder-fields-{viewport['width']}")


def test_compaction_is_set_in_the_form_and_checked_at_its_path(page: Page, api: Api) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    open_new(page)
    page.fill("#f-name", "summariser")
    enabled = page.get_by_label("Summarise long sessions")
    expect(enabled).to_be_checked()  # on by default
    page.fill("#f-compaction-threshold", "10")
    page.fill("#f-compaction-keep_last", "10")
    error = page.locator("[data-field='compaction'] .field-error").first
    expect(error).to_contain_text("keep_last must be smaller than threshold")
    page.fill("#f-compaction-keep_last", "4")
    expect(page.locator("#validity")).to_have_text("Valid")
    enabled.uncheck()
    assert spec_in_editor(page)["compaction"] == {"threshold": 10, "keep_last": 4, "enabled": False}
    page.locator("[data-field=compaction]").scroll_into_view_if_needed()
    screenshot(page, "builder-compaction")
    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    stored = api.get(f"/api/agents/{agent_id}/")["spec"]
    assert stored["compaction"] == {"enabled": False, "threshold": 10, "keep_last": 4}


def test_a_budget_is_set_in_the_form_and_checked_at_its_path(page: Page, api: Api) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    open_new(page)
    page.fill("#f-name", "thrifty")
    page.fill("#f-budget-run_cost", "-1")
    error = page.locator("[data-field='budget.run_cost'] .field-error").first
    expect(error).to_be_visible()
    page.fill("#f-budget-run_cost", "0.50")
    page.fill("#f-budget-day_tokens", "100000")
    expect(page.locator("#validity")).to_have_text("Valid")
    assert spec_in_editor(page)["budget"] == {"run_cost": "0.50", "day_tokens": 100000}
    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    budget = api.get(f"/api/agents/{agent_id}/")["spec"]["budget"]
    assert (Decimal(budget["run_cost"]), budget["day_tokens"]) == (Decimal("0.5"), 100000)
