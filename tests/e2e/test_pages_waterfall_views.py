"""The waterfall in Chromium as a person moves around it: a session of several runs
stacks them newest first, ctrl + wheel zooms around the pointer, dragging pans, and the
playground's and the session list's Waterfall links open it."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime

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


def tool_share(api: Api, session_id: str) -> tuple[float, float]:
    """The newest run's tool call as a share of the run's time (the chart's fitted
    window), and that time in µs: the demo model answers at once, so the share is
    whatever the machine made of each step, from a sliver to most of the run."""
    run = api.get(f"/api/runs/?session={session_id}")["results"][0]
    spans = api.get(f"/api/runs/{run['id']}/spans/")["spans"]
    at = lambda text: datetime.fromisoformat(text).timestamp()  # noqa: E731
    start = min(at(s["start"]) for s in spans)
    end = max(at(s["end"]) for s in spans)
    tool = next(s for s in spans if s["kind"] == "tool")
    length = max(end - start, 1e-4)
    return (at(tool["end"]) - at(tool["start"])) / length, length * 1e6


def test_ctrl_wheel_zooms_around_the_pointer_and_dragging_pans(
    page: Page, api: Api, three_runs: str
) -> None:
    open_waterfall(page, three_runs)
    before_wheel = bar_box(page)
    page.mouse.move(
        before_wheel["x"] + before_wheel["width"] / 2,
        before_wheel["y"] + before_wheel["height"] / 2,
    )
    page.mouse.wheel(0, -400)  # without ctrl: no zoom (the page may scroll instead)
    fitted = settled_bar_box(page)
    assert fitted["width"] == pytest.approx(before_wheel["width"], abs=1)
    # The scroll may have moved the bar from under the pointer: point at it again, at
    # the middle of the call itself (a sliver is drawn 2 px wide from where it starts),
    # on a whole pixel, as the page reads the pointer.
    track = page.locator(TOOL_BAR).locator("xpath=..").bounding_box()  # the time axis
    assert track is not None
    share, run_us = tool_share(api, three_runs)
    centre_x = round(fitted["x"] + min(fitted["width"], share * track["width"]) / 2)
    centre_y = fitted["y"] + fitted["height"] / 2
    page.mouse.move(centre_x, centre_y)
    # Zoom in until the tool call spans a quarter of the chart (at least 1.5 times): a
    # sliver is drawn 2 px wide, so a fixed gentle zoom may leave it there, and a fixed
    # strong one may push a long call past the chart's edges.
    factor = max(min(0.25 / share, run_us / 200), 1.5)  # the chart shows 100 µs at least
    delta_y = round(-500 * math.log(factor))  # the chart zooms by e^(deltaY / 500)
    factor = math.exp(-delta_y / 500)
    expected = max(share * factor * track["width"], 2.0)
    page.keyboard.down("Control")
    page.mouse.wheel(0, delta_y)
    page.keyboard.up("Control")
    wait_for_bar(page, f"b.width > Math.max(before.width * 1.3, {expected * 0.8})", fitted)
    zoomed = settled_bar_box(page)  # the wheel may arrive as several events
    # Zoomed around the pointer: the time under it stays there, so the call's start is
    # `factor` times as far from the pointer as before. (Not "the bar is still under the
    # pointer": a call of a pixel or two has no whole pixel surely inside it, and a
    # zoom of 100 or more turns a fraction of a pixel into tens.)
    starts_at = centre_x + (fitted["x"] - centre_x) * factor
    assert abs(zoomed["x"] - starts_at) <= 2 + 0.01 * zoomed["width"], (fitted, zoomed, factor)
    screenshot(page, "waterfall-zoomed")

    # Drag one way or the other by 90 px: the bar follows the pointer, so it needs that
    # much room on the chart on that side, and the time window needs that much of the run
    # beyond it (zoomed around the pointer at `at`, it has at * (factor - 1) px of the
    # run before it and the rest after it).
    drag = 90
    at = centre_x - track["x"]
    room_left = min(zoomed["x"] - track["x"], (track["width"] - at) * (factor - 1))
    room_right = min(track["x"] + track["width"] - zoomed["x"] - zoomed["width"], at * (factor - 1))
    assert max(room_left, room_right) > drag, (share, factor, track, zoomed)
    direction = -1 if room_left > room_right else 1
    y = zoomed["y"] + zoomed["height"] / 2
    page.mouse.move(centre_x, y)
    page.mouse.down()
    for step in range(1, 10):
        page.mouse.move(centre_x + direction * step * drag / 9, y)
    page.mouse.up()
    moved = "b.x < before.x - 60" if direction < 0 else "b.x > before.x + 60"
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
