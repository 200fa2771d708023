"""Replay from the session page, in Chromium on a real Daphne: the "Replay" button runs
the latest run again in a new session on its recorded outputs (the same rows), and with
another agent version the timeline shows where the replay diverged."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}


def finished_run(api: Api, agent_name: str, text: str) -> dict[str, Any]:
    agents = api.get("/api/agents/?page_size=100")["results"]
    agent = next(a for a in agents if a["name"] == agent_name)
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": text})
    deadline = time.monotonic() + 30
    while (run := api.get(f"/api/runs/{run['id']}/"))["status"] not in ENDED:
        assert time.monotonic() < deadline, run
        time.sleep(0.1)
    assert run["status"] == "succeeded", run
    return run


def replay_from_the_page(page: Page, run: dict[str, Any], version: int | None = None) -> str:
    """Click Replay on ``run``'s session page; the new session's id, once it ended."""
    page.goto(f"/sessions/{run['session']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    controls = page.locator("#replay-controls")
    expect(controls).to_be_visible()
    if version is not None:
        page.select_option("#replay-version", label=f"v{version}")
    controls.get_by_role("button", name="Replay").click()
    page.wait_for_url(lambda url: run["session"] not in url and "/sessions/" in url)
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.locator("#session-status")).to_have_text("succeeded")
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def test_the_replay_button_reproduces_the_run_in_a_new_session(page: Page, api: Api) -> None:
    run = finished_run(api, "calculator", "what is (12 + 30) * 2?")

    replay_session = replay_from_the_page(page, run)

    link = page.get_by_test_id("replay-of").locator("a")
    expect(link).to_have_attribute("href", f"/sessions/{run['session']}/")
    original = [(e["seq"], e["type"]) for e in api.events(run["session"])]
    replayed = [(e["seq"], e["type"]) for e in api.events(replay_session)]
    assert replayed == original
    shown = [row for row in replayed if row[1] != "tool_started"]
    assert timeline_rows(page) == shown
    expect(page.locator(".ev.replay-diverged")).to_have_count(0)
    # Both answers were played back: no tokens, no cost, and each says so.
    expect(page.locator(".ev.agent_message .chip.cached")).to_have_text(["replayed"] * 2)
    [replay] = api.get(f"/api/runs/?session={replay_session}")["results"]
    assert replay["replay_of"] == run["id"]
    assert (replay["input_tokens"], replay["output_tokens"]) == (0, 0)
    screenshot(page, "timeline-replayed")


def test_a_replay_with_another_version_marks_where_it_diverged(page: Page, api: Api) -> None:
    run = finished_run(api, "helpdesk", "write a poem about rain")
    agents = api.get("/api/agents/?page_size=100")["results"]
    helpdesk = next(a for a in agents if a["name"] == "helpdesk")
    spec = api.get(f"/api/agents/{helpdesk['id']}/")["spec"]
    poet = next(s for s in spec["sub_agents"] if s["name"] == "poet")
    poet["instruction"] = "Write short poems.\nReply: Rain on the roof: {last_user_message}"
    newer = api.patch(f"/api/agents/{helpdesk['id']}/", {"spec": spec})

    replay_from_the_page(page, run, version=newer["current_version"])

    marker = page.locator(".ev.replay-diverged")
    expect(marker).to_have_count(1)
    expect(marker).to_contain_text(
        "replay diverged here: 'poet' has another instruction than the recorded version"
    )
    expect(page.locator("#timeline")).to_contain_text("Rain on the roof")
    screenshot(page, "timeline-replay-diverged")
