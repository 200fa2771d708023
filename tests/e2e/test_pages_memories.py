"""Memory in the browser: an agent remembers in one session, recalls it in the next,
and the memories page shows the memory, as text, with a link to the session that
wrote it."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

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
    screenshot(page, "memories-page")
    link.click()
    expect(page.locator(".tool[data-tool=remember]")).to_be_visible()
