"""The builder's policy rules in Chromium: a rule and its conditions set in the form,
the server's problems shown at the field they are about, the rule saved as written, and
its decisions drawn in the timeline of a run."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

WIDE = {"width": 1280, "height": 900}


def spec_in_editor(page: Page) -> dict[str, Any]:
    return json.loads(page.locator("#json-editor").input_value())  # type: ignore[no-any-return]


def test_a_rule_is_written_in_the_form_checked_at_its_fields_and_saved(
    page: Page, api: Api
) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    page.fill("#f-name", "careful_payer")
    page.get_by_label("calculator", exact=True).check()
    page.get_by_role("button", name="Add rule").click()
    page.fill("#f-policies-0-name", "no_division")
    page.fill("#f-policies-0-match", "calculator")
    page.get_by_role("button", name="Add condition").click()
    page.fill("#f-policies-0-when-0-arg", "expression")
    page.select_option("#f-policies-0-when-0-op", "gt")
    page.fill("#f-policies-0-when-0-value", "lots")
    problem = page.locator("[data-field='policies.0.when.0.value'] .field-error")
    expect(problem).to_have_text("greater than compares with a number")

    page.select_option("#f-policies-0-when-0-op", "contains")
    page.fill("#f-policies-0-when-0-value", "/")
    page.fill("#f-policies-0-reason", "division is off today")
    expect(page.locator("#validity")).to_have_text("Valid")
    page.select_option("#f-policies-0-action", "rewrite")
    expect(page.locator("[data-field='policies.0.set'] .field-error")).to_contain_text(
        "a rewrite rule needs the arguments to set"
    )
    page.fill("#f-policies-0-set", '{"expression": "1 + 1"}')
    expect(page.locator("#validity")).to_have_text("Valid")
    rule = {
        "name": "no_division",
        "match": "calculator",
        "action": "rewrite",
        "when": [{"arg": "expression", "op": "contains", "value": "/"}],
        "reason": "division is off today",
        "set": {"expression": "1 + 1"},
    }
    assert spec_in_editor(page)["policies"] == [rule]
    page.locator("[data-field=policies]").scroll_into_view_if_needed()
    screenshot(page, "builder-policies")

    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert api.get(f"/api/agents/{agent_id}/")["spec"]["policies"] == [rule]
