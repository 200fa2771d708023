"""The overview dashboard in Chromium: a run made through the API shows in today's
figures and in charts drawn by the vendored uPlot, light and dark, with no CSP
violation or console error (the ``context`` fixture fails on any), and its figures link
down to the session behind them."""

from __future__ import annotations

import re

from playwright.sync_api import Browser, Page, expect

from studio import figures
from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.test_pages_live import send, wait_for_run_end
from tests.support.daphne_server import DaphneServer


def test_the_overview_counts_todays_run_and_links_to_its_session(page: Page, api: Api) -> None:
    spec = {"name": "overviewed", "model": "scripted", "instruction": "Reply: hello there"}
    session = api.post("/api/sessions/", {"agent": api.agent(spec)["id"], "title": "Counted"})
    assert wait_for_run_end(api, send(api, session["id"], "hi")["id"])["status"] == "succeeded"

    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/overview/")
    expect(page.locator("body")).to_have_attribute("data-ready", "overview")
    expect(page.locator(".chart-box canvas")).to_have_count(4)
    agents = page.get_by_test_id("overview-agents")
    row = agents.locator("tr", has_text="overviewed")
    expect(row.locator("[data-figure=runs]")).to_have_text("1")
    expect(row.locator("td").last).to_have_text(re.compile(r"^\$0\.0000[1-9]\d$"))
    expect(page.get_by_test_id("overview-models")).to_contain_text("scripted")
    # The cost chart writes costs as the tables do ("$0.000012"), not "1.2e-5".
    chart = page.locator('[data-chart="cost"] .u-over').bounding_box()
    assert chart is not None
    page.mouse.move(chart["x"] + chart["width"] - 1, chart["y"] + chart["height"] / 2)  # today
    today = page.locator('[data-chart="cost"] .u-legend .u-series').nth(1).locator(".u-value")
    expect(today).to_have_text(row.locator("td").last.inner_text())
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # One run: the runs and tokens axes tick at whole numbers, not at "0.5 runs".
    for counted in ("runs", "tokens"):
        axis = f"document.querySelector('[data-chart={counted}]').plot.axes[1]"
        ticks = page.evaluate(f"{axis}._splits")
        assert ticks and all(tick == int(tick) for tick in ticks), (counted, ticks)
    # Latency starts at 0 s (a day's p50 beside its p95 is not magnified into a cliff),
    # and its ticks are written with the decimals their spacing needs: none alike
    # ("0.9" twice), none in exponent form ("5.0e-3").
    for charted in ("latency", "cost"):
        axis = f"document.querySelector('[data-chart={charted}]').plot.axes[1]"
        ticks, written = page.evaluate(f"[{axis}._splits, {axis}._values]")
        assert ticks[0] == 0 and len(set(written)) == len(written), (charted, written)
        assert not any("e" in label for label in written), (charted, written)
    screenshot(page, "overview-light", full_page=True)
    page.emulate_media(color_scheme="dark")
    expect(page.locator(".chart-box canvas")).to_have_count(4)
    screenshot(page, "overview-dark", full_page=True)

    row.locator("[data-figure=runs]").click()
    expect(page.get_by_test_id("ran-filter")).to_be_visible()
    expect(page.get_by_test_id("session-table")).to_contain_text("Counted")
    expect(page.locator("[data-session]")).to_have_count(1)

    # A model's figure opens the sessions whose runs called that model.
    page.go_back()
    models = page.get_by_test_id("overview-models")
    models.locator("tr", has_text="scripted").get_by_role("link").first.click()
    expect(page.get_by_test_id("ran-filter")).to_contain_text("calling scripted")
    expect(page.get_by_test_id("session-table")).to_contain_text("Counted")


def test_the_pages_scripts_write_durations_as_the_server_does(page: Page) -> None:
    """``formatDuration`` (live pages) and ``studio.figures.duration`` (rendered pages,
    the admin) write one duration alike, ties and times under a millisecond included."""
    page.goto("/overview/")
    values = [0, 0.2, 0.5, 2.5, 320.4, 999.6, 1250, 59_960, 119_600, 125_000, 3_599_700, 3_729_000]
    written = page.evaluate(
        "async (values) => { const ui = await import('/static/studio/js/lib/ui.js');"
        " return values.map((v) => ui.formatDuration(v)); }",
        values,
    )
    assert written == [figures.duration(v) for v in values]
    assert written[1] == "<1 ms"
    assert written[5] == "1.0 s"  # the unit follows the rounded figure


def test_chart_ticks_are_written_with_the_decimals_their_spacing_needs(page: Page) -> None:
    """A narrow band of latencies ticks 0.005 s apart: each tick reads differently, none
    in exponent form (the overview's value axes; costs are written as costs)."""
    page.goto("/overview/")
    cases = [
        ([0.89, 0.895, 0.9, 0.905, 0.91], 0.005),
        ([0, 0.002, 0.004, 0.006], 0.002),
        ([0, 0.25, 0.5, 0.75], 0.25),
        ([0, 2500, 5000], 2500),
    ]
    written = page.evaluate(
        "async (cases) => { const ui = await import('/static/studio/js/lib/ui.js');"
        " return cases.map(([ticks, step]) => ui.formatTicks(ticks, step)); }",
        cases,
    )
    assert written == [
        ["0.890", "0.895", "0.900", "0.905", "0.910"],
        ["0.000", "0.002", "0.004", "0.006"],
        ["0.00", "0.25", "0.50", "0.75"],
        ["0", "2,500", "5,000"],
    ]


def test_the_pages_scripts_write_times_in_utc_as_the_server_does(
    browser: Browser, pages_server: DaphneServer
) -> None:
    """The server writes times in UTC, 24-hour ("Started Dec 6, 22:05"); a time a script
    writes on the same page (an event's, a run's in the waterfall) reads the same, in a
    browser set to New York and to English (US) too."""
    context = browser.new_context(
        base_url=pages_server.url, timezone_id="America/New_York", locale="en-US"
    )
    try:
        page = context.new_page()
        page.goto("/accounts/login/")
        written = page.evaluate(
            "async (times) => { const ui = await import('/static/studio/js/lib/ui.js');"
            " return times.map((t) => ui.formatTime(t)); }",
            ["2026-01-02T15:04:05Z", "2026-07-01T00:00:09.500+00:00"],
        )
    finally:
        context.close()
    assert written == ["15:04:05", "00:00:09"]
