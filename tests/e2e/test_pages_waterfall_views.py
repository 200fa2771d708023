"""The waterfall in Chromium as a person moves around it: a session of several runs
stacks them newest first, ctrl + wheel zooms around the pointer, dragging pans, and the
playground's and the session list's Waterfall links open it."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
QUESTIONS = ["what is 1 + 1", "what is 2 + 2", "what is 3 + 3"]
TOOL_BAR = ".wf-run:first-child .wf-span[data-kind=tool] .wf-bar"


@pytest.fixture(scope="module")
def three_runs(api: Api) -> str:
    """A session of the demo calculator agent with three ended runs, one per question."""
    agent = next(a for a in api.get("/api/agents/")["results"] if a["name"] == "calculator")
    session_id = str(api.post("/api/sessions/", {"agent": agent["id"]})["id"])
    for text in QUESTIONS:
        run = api.post(f"/api/sessions/{session_id}/messages/", {"text": text})
        deadline = time.monotonic() + 30
        while api.get(f"/api/runs/{run['id']}/")["status"] not in ENDED:
            assert time.monotonic() < deadline, f"the run of {text!r} did not end"
            time.sleep(0.1)
    return session_id


def expect_waterfall(page: Page, session_id: str) -> None:
    expect(page).to_have_url(re.compile(f"/sessions/{session_id}/waterfall/$"))
    expect(page.locator("body")).to_have_attribute("data-ready", "waterfall")


def open_waterfall(page: Page, session_id: str) -> None:
    page.goto(f"/sessions/{session_id}/waterfall/")
    expect_waterfall(page, session_id)
    expect(page.locator(TOOL_BAR)).to_be_visible()


def bar_box(page: Page) -> dict[str, float]:
    box = page.locator(TOOL_BAR).bounding_box()
    assert box is not None
    return box  # type: ignore[return-value]


def wait_for_bar(page: Page, condition: str, before: dict[str, float]) -> None:
    """Waits (on the drawn bar, bounded) until ``condition`` holds of its new box ``b``
    and the one it had ``before``."""
    page.wait_for_function(
        f"([sel, before]) => {{ const b = document.querySelector(sel).getBoundingClientRect();"
        f" return {condition}; }}",
        arg=[TOOL_BAR, before],
        timeout=10_000,
    )


def test_a_session_of_several_runs_stacks_them_newest_first(
    page: Page, api: Api, three_runs: str
) -> None:
    open_waterfall(page, three_runs)
    sections = page.locator(".wf-run")
    expect(sections).to_have_count(3)
    newest_first = [r["id"] for r in api.get(f"/api/runs/?session={three_runs}")["results"]]
    assert [sections.nth(i).get_attribute("data-run") for i in range(3)] == newest_first
    expect(sections.locator(".wf-run-title")).to_have_text(
        [re.compile(re.escape(q)) for q in reversed(QUESTIONS)]
    )
    # The newest is open; the older ones open on a click, with spans of their own.
    expect(sections.nth(0).locator(".wf-toggle")).to_have_attribute("aria-expanded", "true")
    expect(sections.nth(2).locator(".wf-toggle")).to_have_attribute("aria-expanded", "false")
    # A run not opened yet counts no spans it has not read; opened, it counts them.
    expect(sections.nth(0).locator(".wf-figures")).to_contain_text("4 spans")
    expect(sections.nth(2).locator(".wf-figures")).not_to_contain_text("spans")
    sections.nth(2).locator(".wf-toggle").click()
    expect(sections.nth(2).locator(".wf-span[data-kind=tool]")).to_have_count(1)
    expect(sections.nth(2).locator(".wf-figures")).to_contain_text("4 spans")
    screenshot(page, "waterfall-three-runs", full_page=True)


def settled_bar_box(page: Page) -> dict[str, float]:
    """The tool bar's box once it has stood still for five frames (a wheel may have
    started a smooth scroll that moves it for a while)."""
    return page.evaluate(
        """(sel) => new Promise((resolve) => {
            let last = "", still = 0;
            const tick = () => {
                const r = document.querySelector(sel).getBoundingClientRect();
                const now = [r.x, r.y, r.width, r.height].join();
                still = now === last ? still + 1 : 0;
                last = now;
                if (still >= 5) resolve({x: r.x, y: r.y, width: r.width, height: r.height});
                else requestAnimationFrame(tick);
            };
            requestAnimationFrame(tick);
        })""",
        TOOL_BAR,
    )


def test_ctrl_wheel_zooms_around_the_pointer_and_dragging_pans(page: Page, three_runs: str) -> None:
    open_waterfall(page, three_runs)
    before_wheel = bar_box(page)
    page.mouse.move(
        before_wheel["x"] + before_wheel["width"] / 2,
        before_wheel["y"] + before_wheel["height"] / 2,
    )
    page.mouse.wheel(0, -400)  # without ctrl: no zoom (the page may scroll instead)
    fitted = settled_bar_box(page)
    assert fitted["width"] == pytest.approx(before_wheel["width"], abs=1)
    # The scroll may have moved the bar from under the pointer: point at it again.
    centre_x = fitted["x"] + fitted["width"] / 2
    centre_y = fitted["y"] + fitted["height"] / 2
    run_bar = page.locator(".wf-run:first-child .wf-span[data-kind=agent] .wf-bar").first
    run_box = run_bar.bounding_box()  # the whole run, fitted
    assert run_box is not None
    page.mouse.move(centre_x, centre_y)
    # Ten times in (e^-2.3): the tool call is a sliver of the run, drawn at least 2 px
    # wide, so a gentle zoom may leave it under its minimum width.
    page.keyboard.down("Control")
    page.mouse.wheel(0, -1150)
    page.keyboard.up("Control")
    # Zoomed around the pointer: the bar is wider and still under it.
    wait_for_bar(page, "b.width > before.width * 1.8", fitted)
    zoomed = settled_bar_box(page)  # the wheel may arrive as several events
    assert zoomed["x"] <= centre_x <= zoomed["x"] + zoomed["width"], (fitted, zoomed)
    screenshot(page, "waterfall-zoomed")

    # Drag towards the side of the run with more of it left to show (the window stops at
    # the run's start and end): right moves the window earlier and the bar right by about
    # the drag, left the other way. Where the tool call falls in the run varies with how
    # long each step took.
    early = centre_x < run_box["x"] + run_box["width"] / 2
    direction = -1 if early else 1
    y = zoomed["y"] + zoomed["height"] / 2
    page.mouse.move(centre_x, y)
    page.mouse.down()
    for step in range(1, 9):
        page.mouse.move(centre_x + direction * step * 15, y)
    page.mouse.up()
    moved = "b.x < before.x - 60" if early else "b.x > before.x + 60"
    wait_for_bar(page, f"{moved} && Math.abs(b.width - before.width) < 2", zoomed)
    # A drag is not a click: nothing was selected by it.
    expect(page.locator("#wf-detail h2")).to_have_count(0)
    page.locator(".wf-chart").first.press("0")  # fit again
    wait_for_bar(page, "Math.abs(b.width - before.width) < 2", fitted)


def test_the_playground_and_the_session_list_open_the_waterfall(
    page: Page, three_runs: str
) -> None:
    page.goto(f"/playground/?session={three_runs}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.locator("#open-waterfall").click()
    expect_waterfall(page, three_runs)

    page.goto("/sessions/")
    row = page.locator(f"tr[data-session='{three_runs}']")
    row.get_by_role("link", name="Waterfall").click()
    expect_waterfall(page, three_runs)
