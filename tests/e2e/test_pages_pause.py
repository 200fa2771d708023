"""Pause and resume in Chromium: the timeline's run bar pauses a running run, which
stops after its current step (the paused event drawn, the badge and the run bar saying
so), and resumes it to its end; the playground's composer does the same."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows

WIDE = {"width": 1280, "height": 900}
# The first step streams for about three seconds, then calls the calculator: a pause
# pressed while it streams holds the run before its second model call.
THINKING = " ".join(f"w{i}" for i in range(150))


def pausable_session(api: Api, name: str) -> dict[str, Any]:
    api.model(
        f"{name}_script",
        loop=False,
        token_delay_s=0.02,
        script=[
            {
                "text": THINKING,
                "tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}],
            },
            {"text": "The answer is 42."},
        ],
    )
    agent = api.agent(
        {
            "name": name,
            "model": f"{name}_script",
            "instruction": "Follow the script.",
            "tools": [{"name": "calculator"}],
        }
    )
    return api.post("/api/sessions/", {"agent": agent["id"]})  # type: ignore[no-any-return]


def test_the_timeline_pauses_a_run_after_its_step_and_resumes_it(page: Page, api: Api) -> None:
    session = pausable_session(api, "pausable")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")

    api.post(f"/api/sessions/{session['id']}/messages/", {"text": "What is 6 * 7?"})
    pause = page.locator("#pause-run")
    expect(page.locator(".agent_message.provisional")).to_be_visible()
    expect(pause).to_have_text("Pause")
    pause.click()

    expect(page.locator("#session-status")).to_have_text("paused")
    expect(pause).to_have_text("Resume")
    expect(page.locator("#run-waiting")).to_contain_text("paused")
    paused = page.locator(".ev.run_paused")
    expect(paused).to_contain_text("Paused")
    expect(paused).to_contain_text("paused by request")
    # Held after the first step's tool call, before the second model call.
    expect(page.locator(".tool .outcome, .tool").first).to_contain_text("42")
    expect(page.locator(".ev.agent_message", has_text="The answer is 42.")).to_have_count(0)
    paused.scroll_into_view_if_needed()
    screenshot(page, "timeline-paused")

    pause.click()
    expect(page.locator(".ev.run_resumed")).to_contain_text("Resumed")
    expect(page.locator("#session-status")).to_have_text("succeeded")
    expect(page.locator("#runbar")).to_be_hidden()
    expect(page.locator(".ev.agent_message", has_text="The answer is 42.")).to_have_count(1)
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in api.events(session["id"])]
    screenshot(page, "timeline-resumed")


def test_the_playground_pauses_and_resumes_its_run(page: Page, api: Api) -> None:
    session = pausable_session(api, "pausable_chat")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/playground/?session={session['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.fill("#message", "What is 6 * 7?")
    page.click("#send")
    pause = page.locator("#pause")
    expect(page.locator(".msg.provisional")).to_be_visible()
    expect(pause).to_have_text("Pause")
    pause.click()
    expect(page.locator(".msg.paused")).to_contain_text("paused by request")
    expect(pause).to_have_text("Resume")
    expect(page.locator("#chat-waiting")).to_have_text("Paused: resume to go on")
    screenshot(page, "playground-paused")
    pause.click()
    expect(page.locator(".msg.resumed")).to_be_visible()
    expect(page.locator(".msg.agent", has_text="The answer is 42.")).to_be_visible()
    expect(pause).to_be_hidden()
