"""Where the money went, in the waterfall: each span's cost in the detail panel and the
rows' titles, and the cost heat colouring, in a real browser. Scripted models carry the
demo's made-up price; one model has no price, so its call's cost is unknown."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from studio.figures import cost as written
from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.test_pages_live import send, wait_for_run_end
from tests.e2e.test_pages_waterfall import open_waterfall, row

ESSAY = "A long essay on where the money went. " * 200  # some 1,900 output tokens


def costly_team(api: Api) -> dict[str, Any]:
    """A cheap call, a costly one, and one whose model has no price (cost unknown)."""
    api.model("nod_cost", script=[{"text": "Noted."}])
    api.model("essay_cost", script=[{"text": ESSAY}])
    unpriced = {"price_input": None, "price_output": None}
    api.post(
        "/api/models/",
        {"name": "guess_cost", "provider": "scripted", "options": {}, **unpriced},
    )
    agents = [("nodder", "nod_cost"), ("essayist", "essay_cost"), ("guesser", "guess_cost")]
    spec = {
        "type": "sequential",
        "name": "costly_team",
        "sub_agents": [
            {"name": name, "model": model, "instruction": f"You are {name}."}
            for name, model in agents
        ],
    }
    return api.agent(spec)


def model_span(spans: list[dict[str, Any]], author: str) -> dict[str, Any]:
    return next(s for s in spans if s["kind"] == "model" and s["author"] == author)


def bar_colour(page: Page, span_id: str) -> str:
    # Read from the row in one go: a redraw may replace the bar between two calls.
    return page.locator(f"#wf-span-{span_id}").evaluate(  # type: ignore[no-any-return]
        "row => getComputedStyle(row.querySelector('.wf-bar')).backgroundColor"
    )


def test_the_waterfall_shows_each_spans_cost_and_colours_bars_by_it(page: Page, api: Api) -> None:
    session = api.post("/api/sessions/", {"agent": costly_team(api)["id"], "title": "costs"})
    page.set_viewport_size({"width": 1366, "height": 860})
    open_waterfall(page, session["id"])
    run = wait_for_run_end(api, send(api, session["id"], "where did it go?")["id"])
    assert run["status"] == "succeeded" and run["cost_complete"] is False
    spans = api.get(f"/api/runs/{run['id']}/spans/")["spans"]
    essay, nod, guess = (model_span(spans, name) for name in ("essayist", "nodder", "guesser"))
    assert float(essay["cost"]["amount"]) > 50 * float(nod["cost"]["amount"]) > 0
    assert guess["cost"] == {
        "amount": None,
        "currency": None,
        "complete": False,
        "calls": 1,
        "unknown": 1,
    }

    # The spans grew live, from the socket's events: their costs as the API sums them.
    expect(row(page, "costly_team", "agent")).to_have_attribute("data-status", "ok")
    team = next(s for s in spans if s["parent_span_id"] is None)
    assert team["cost"]["calls"] == 3 and not team["cost"]["complete"]
    expect(row(page, "costly_team", "agent")).to_have_attribute("data-cost", team["cost"]["amount"])
    essay_row = page.locator(f"#wf-span-{essay['span_id']}")
    essay_cost = written(essay["cost"]["amount"])  # as every page writes a cost
    assert essay_cost.startswith("$0.00")
    expect(essay_row).to_have_attribute("title", f"model model (essayist) · cost {essay_cost}")
    essay_row.locator(".wf-label").click()
    cost = page.locator("#wf-detail .wf-cost")
    expect(cost).to_have_attribute("data-cost", essay["cost"]["amount"])
    expect(cost).to_have_text(essay_cost)
    row(page, "costly_team", "agent").locator(".wf-label").click()
    at_least = written(team["cost"]["amount"], complete=False)
    expect(cost).to_have_text(f"{at_least} · 3 model calls, 1 of unknown cost")
    page.locator(f"#wf-span-{guess['span_id']} .wf-label").click()
    expect(cost).to_have_text("unknown")

    # Coloured by cost: the costly call is hot, the cheap one cool, the unknown hatched.
    legend = page.locator("#wf-cost-legend")
    expect(legend).to_be_hidden()
    by_kind = bar_colour(page, essay["span_id"])
    assert by_kind == bar_colour(page, nod["span_id"])  # both model calls, one colour
    page.locator("#wf-colour").select_option("cost")
    expect(legend).to_be_visible()
    expect(legend).to_contain_text("cost unknown")
    expect(essay_row.locator(".wf-bar")).to_have_class(re.compile(r"\bcost-4\b"))
    nod_bar = page.locator(f"#wf-span-{nod['span_id']} .wf-bar")
    expect(nod_bar).to_have_class(re.compile(r"\bcost-0\b"))
    hot, cool = bar_colour(page, essay["span_id"]), bar_colour(page, nod["span_id"])
    assert len({hot, cool, by_kind}) == 3
    guess_bar = page.locator(f"#wf-span-{guess['span_id']} .wf-bar")
    expect(guess_bar).to_have_class(re.compile(r"\bcost-unknown\b"))
    hatch = "row => getComputedStyle(row.querySelector('.wf-bar')).backgroundImage"
    assert "gradient" in page.locator(f"#wf-span-{guess['span_id']}").evaluate(hatch)
    expect(essay_row.locator(".wf-dur")).to_contain_text(f"· {essay_cost}")
    screenshot(page, "waterfall-cost-heat")
    page.emulate_media(color_scheme="dark")
    assert bar_colour(page, essay["span_id"]) != hot  # its own scale for the dark theme
    screenshot(page, "waterfall-cost-heat-dark")
    page.emulate_media(color_scheme="light")

    # The colouring is kept for the next visit; the spans then come from the API.
    open_waterfall(page, session["id"])
    expect(page.locator("#wf-colour")).to_have_value("cost")
    hot_bar = page.locator(f"#wf-span-{essay['span_id']} .wf-bar")
    expect(hot_bar).to_have_class(re.compile(r"\bcost-4\b"))
    colour = page.get_by_label("Colour")  # a labelled form control, worked by keyboard
    colour.focus()
    page.keyboard.press("ArrowUp")
    expect(colour).to_have_value("heat")
    expect(legend).to_be_hidden()
