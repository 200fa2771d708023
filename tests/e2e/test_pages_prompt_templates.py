"""Prompt templates in the browser: written and previewed on their page, then chosen in
the builder, previewed against sample state, and pinned when the agent is saved."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

WIDE = {"width": 1280, "height": 900}
SOURCE = "You help {{ customer }}.\n{% if tier == 'gold' %}Answer first, then explain.{% endif %}"


def test_a_template_is_previewed_as_text_and_saved_as_versions(page: Page) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/templates/")
    expect(page.get_by_test_id("templates-empty")).to_be_visible()
    page.get_by_role("link", name="+ New template").first.click()
    page.fill("#id_name", "support")
    page.fill("#id_source", SOURCE)
    page.fill("#id_sample_state", '{"customer": "<img src=x onerror=alert(1)>", "tier": "gold"}')
    page.get_by_role("button", name="Preview").click()
    preview = page.get_by_test_id("preview-text")
    expect(preview).to_have_text(
        "You help <img src=x onerror=alert(1)>.\nAnswer first, then explain."
    )
    expect(page.locator("[data-testid=preview] img")).to_have_count(0)
    screenshot(page, "template-preview")

    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("heading", name="support")).to_be_visible()
    expect(page.get_by_role("button", name="Save as version 2")).to_be_visible()
    page.fill("#id_source", "{% include 'x' %}")
    page.get_by_role("button", name="Save as version 2").click()
    expect(page.locator("[data-field=source] .field-error")).to_contain_text("may not use include")
    screenshot(page, "template-refused")
    page.fill("#id_source", SOURCE + " Be brief.")
    page.fill("#id_description", "brief")
    page.get_by_role("button", name="Save as version 2").click()
    expect(page.locator("[data-version]")).to_have_count(2)
    screenshot(page, "template-versions")


@pytest.mark.usefixtures("page")
def test_the_builder_uses_a_template_previews_it_and_pins_its_version(page: Page, api: Api) -> None:
    api.post("/api/prompt-templates/", {"name": "concierge", "source": "old"})
    api.post("/api/prompt-templates/", {"name": "concierge", "source": SOURCE})
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    page.fill("#f-name", "greeter")
    page.select_option("#f-instruction_template", "concierge")
    expect(page.locator("#f-instruction")).to_have_count(0)
    expect(page.get_by_test_id("template-pin")).to_have_text("Saving pins the latest version (2).")
    page.fill("#f-template_state", '{"customer": "Ada"}')
    page.get_by_role("button", name="Preview").click()
    out = page.get_by_test_id("template-preview")
    expect(out).to_contain_text("'tier' is undefined")
    page.fill("#f-template_state", '{"customer": "Ada", "tier": "gold"}')
    page.get_by_role("button", name="Preview").click()
    expect(out).to_have_text("You help Ada.\nAnswer first, then explain.")
    expect(page.locator("#validity")).to_have_text("Valid")
    page.locator("[data-field=instruction_template]").scroll_into_view_if_needed()
    screenshot(page, "builder-template")

    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    stored = api.get(f"/api/agents/{agent_id}/")["spec"]
    assert stored["instruction_template"] == {"name": "concierge", "version": 2}
    assert "instruction" not in stored

    api.post("/api/prompt-templates/", {"name": "concierge", "source": "newer"})
    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    expect(page.get_by_test_id("template-pin")).to_contain_text(
        "This agent renders version 2 (latest: 3)."
    )
