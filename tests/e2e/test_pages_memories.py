"""Memory in the browser: an agent remembers in one session, recalls it in the next,
and the memories page shows the memory, as text, with a link to the session that
wrote it."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.page_checks import bottoms

WIDE = {"width": 1280, "height": 900}
FACT = "The user's dog is called <b>Rex</b>"


def _call(name: str, **args: str) -> dict[str, object]:
    return {"tool_calls": [{"name": name, "args": args}]}


def _say(page: Page, text: str) -> None:
    page.fill("#message", text)
    page.keyboard.press("Enter")


def test_a_memory_written_in_one_session_is_recalled_in_the_next(page: Page, api: Api) -> None:
    model = api.model("memo", script=[_call("remember", text=FACT), {"text": "Noted."}])
    spec = {"name": "keeper", "model": "memo", "instruction": "Remember.", "memory": {}}
    agent = api.agent(spec)
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/playground/?agent={agent['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    _say(page, "My dog is Rex")
    expect(page.locator(".msg.agent .bubble").last).to_have_text("Noted.")
    expect(page.locator(".msg.tool[data-tool=remember]")).to_contain_text("Remembered")
    first_url = page.locator("#open-timeline").get_attribute("href")

    script = [_call("recall", query="dog"), {"text": "From memory: {last_tool_result}"}]
    api.patch(f"/api/models/{model['id']}/", {"options": {"script": script}})
    page.click("#new-session")
    _say(page, "What is my dog called?")
    answer = page.locator(".msg.agent .bubble").last
    expect(answer).to_contain_text(f"From memory: - {FACT} (id ")
    recalled = page.locator(".msg.tool[data-tool=recall]")
    expect(recalled).to_contain_text(FACT)
    expect(page.locator(".msg b")).to_have_count(0)  # the memory's markup is text
    screenshot(page, "memory-recalled")

    page.goto("/memories/?q=dog")
    row = page.locator("[data-testid=memory-table] tbody tr")
    expect(row).to_have_count(1)
    expect(row.get_by_test_id("memory-text")).to_have_value(FACT)
    link = row.get_by_test_id("memory-session")
    expect(link).to_have_attribute("href", first_url or "")
    # The search's fields and its button end on one line (a label keeps a margin).
    form = "form.filters"
    ends = bottoms(page, f"{form} [name=q]", f"{form} [name=agent]", f"{form} button")
    assert max(ends) - min(ends) <= 1, ends
    # The memory's text is what the page is for: its field spans half the table.
    text, table = (
        page.locator(sel).first.bounding_box()
        for sel in ("[data-testid=memory-text]", "[data-testid=memory-table]")
    )
    assert text is not None and table is not None and text["width"] >= 0.4 * table["width"]
    screenshot(page, "memories-page")
    link.click()
    expect(page.locator(".tool[data-tool=remember]")).to_be_visible()


def test_memory_is_set_in_the_builder_and_saved_with_the_spec(page: Page, api: Api) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    page.fill("#f-name", "diarist")
    tools = page.get_by_label("Memory tools: remember, recall, forget")
    expect(tools).not_to_be_checked()
    tools.check()
    page.get_by_label("Save each turn's key facts as memories").check()
    tools.uncheck()
    editor = json.loads(page.locator("#json-editor").input_value())
    assert editor["memory"] == {"tools": False, "save_at_end": True}
    expect(page.locator("#validity")).to_have_text("Valid")
    page.locator("[data-field=memory]").scroll_into_view_if_needed()
    screenshot(page, "builder-memory")
    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert api.get(f"/api/agents/{agent_id}/")["spec"]["memory"] == {
        "tools": False,
        "save_at_end": True,
    }

    # A turn of that agent ends by saving its key facts: a row of the timeline, as text.
    page.goto(f"/playground/?agent={agent_id}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    _say(page, "I live in <i>Oslo</i>")
    expect(page.locator(".msg.agent .bubble").last).not_to_be_empty()
    page.goto(page.locator("#open-timeline").get_attribute("href") or "")
    facts = page.locator(".ev.memory_saved")
    expect(facts).to_contain_text("Memory · key facts saved")
    expect(facts.locator(".key-facts li").first).to_contain_text("<i>Oslo</i>")
    expect(facts.locator("i")).to_have_count(0)
    screenshot(page, "timeline-key-facts")
