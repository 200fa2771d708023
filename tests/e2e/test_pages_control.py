"""Issue 18's control features in Chromium: the builder offers structured output, hooks
and failure policies with each problem at its field, and saves them; the timeline and
the playground draw what a run did with them (a rejected answer, the parsed one as
JSON, hook marks, failures that degrade the run, the degraded badge)."""

from __future__ import annotations

import json
import time
from typing import Any

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows

WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}
ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "contact": {"type": "string"}},
    "required": ["city"],
}


def open_new(page: Page) -> None:
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")


def spec_in_editor(page: Page) -> dict[str, Any]:
    return json.loads(page.locator("#json-editor").input_value())  # type: ignore[no-any-return]


def field_error(page: Page, path: str) -> Any:
    return page.locator(f"[data-field='{path}'] .field-error").first


def test_the_builder_offers_output_schema_hooks_and_failure_policies(page: Page, api: Api) -> None:
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    open_new(page)
    page.fill("#f-name", "forecaster")

    schema = page.locator("#f-output_schema")
    schema.fill('{"type": "object", ')
    expect(field_error(page, "output_schema")).to_contain_text(
        "the output schema is not valid JSON"
    )
    schema.fill(json.dumps({"type": "object", "properties": {"city": {"type": "town"}}}))
    expect(field_error(page, "output_schema")).to_contain_text(
        "is not valid under any of the given schemas"
    )
    schema.fill(json.dumps(WEATHER))
    # The rule is at the output key, which the person has not touched yet: named, quietly.
    expect(page.locator("#validity")).to_have_text("Still to fill in: Output key")
    page.fill("#f-output_key", "weather")
    page.fill("#f-output_retries", "3")
    expect(page.locator("#validity")).to_have_text("Valid")

    page.get_by_label("calculator", exact=True).check()
    page.select_option("#f-tools-0-on_failure", "degrade")
    page.select_option("#f-on_failure", "continue")

    page.select_option("#f-hooks-add", "redact")
    page.get_by_role("button", name="Add hook").click()
    page.select_option("#f-hooks-add", "tool_guard")
    page.get_by_role("button", name="Add hook").click()
    page.click("#save")  # refused: every problem shows, at its field
    expect(field_error(page, "hooks.1.settings.blocked_terms")).to_have_text("Field required")
    expect(page.locator("#problems-count")).to_have_text("1 problem")
    page.fill("#f-hooks-1-settings-blocked_terms", "rm -rf\npassword")
    page.fill("#f-hooks-0-settings-terms", "Project Orion")
    page.get_by_role("button", name="Move tool_guard up").click()
    expect(page.locator("#validity")).to_have_text("Valid")
    page.locator("[data-field=hooks]").scroll_into_view_if_needed()
    screenshot(page, "builder-control-hooks")
    page.locator("fieldset.structured-output").scroll_into_view_if_needed()
    screenshot(page, "builder-control-output")

    spec = spec_in_editor(page)
    assert spec["output_schema"] == WEATHER
    assert (spec["output_key"], spec["output_retries"], spec["on_failure"]) == (
        "weather",
        3,
        "continue",
    )
    assert spec["tools"] == [{"name": "calculator", "on_failure": "degrade"}]
    assert spec["hooks"] == [
        {"name": "tool_guard", "settings": {"blocked_terms": ["rm -rf", "password"]}},
        {"name": "redact", "settings": {"terms": ["Project Orion"]}},
    ]
    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    agent_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    written = {
        k: v for k, v in spec.items() if (k, v) not in [("type", "llm"), ("instruction", "")]
    }
    assert api.get(f"/api/agents/{agent_id}/")["spec"] == written  # stored without defaults

    page.reload()
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    expect(page.locator("#f-tools-0-on_failure")).to_have_value("degrade")
    expect(page.locator("#f-on_failure")).to_have_value("continue")
    expect(page.locator("#f-hooks-0-settings-blocked_terms")).to_have_value("rm -rf\npassword")
    assert json.loads(page.locator("#f-output_schema").input_value()) == WEATHER
    page.set_viewport_size(NARROW)  # type: ignore[arg-type]
    page.locator("[data-field=hooks]").scroll_into_view_if_needed()
    width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width
    screenshot(page, "builder-control-narrow")


def wait_for_run_end(api: Api, session_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Polls the session's run (observable state, with a bound) until it has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = api.get(f"/api/runs/?session={session_id}")["results"]
        if runs and runs[0]["status"] in ENDED:
            return runs[0]  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"the run of session {session_id} did not end within {timeout_s}s")


def test_the_timeline_draws_structured_answers_hooks_and_a_degraded_run(
    page: Page, api: Api
) -> None:
    api.model(
        "control_script",
        loop=False,
        script=[
            {"tool_calls": [{"name": "calculator", "args": {"expression": "1 / 0"}}]},
            {"tool_calls": [{"name": "calculator", "args": {"expression": "the password"}}]},
            {"text": "Paris, I think."},
            {"text": '{"city": "Paris", "contact": "ada@example.com"}'},
        ],
    )
    agent = api.agent(
        {
            "name": "controlled",
            "model": "control_script",
            "instruction": "Follow the script.",
            "tools": [{"name": "calculator", "on_failure": "degrade"}],
            "hooks": [
                {"name": "tool_guard", "settings": {"blocked_terms": ["password"]}},
                {"name": "redact"},
            ],
            "output_schema": WEATHER,
            "output_key": "weather",
        }
    )
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    api.post(f"/api/sessions/{session['id']}/messages/", {"text": "Where is it warm?"})
    run = wait_for_run_end(api, session["id"])
    assert run["status"] == "degraded", run
    assert "tool 'calculator' failed" in run["error_message"]

    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.locator(".inv .badge.degraded")).to_have_text("degraded")

    calls = page.locator(".tool")
    expect(calls).to_have_count(2)
    expect(calls.nth(0).locator(".chip.degraded")).to_have_text("degrades the run")
    expect(calls.nth(1).locator(".chip.hook")).to_have_text("⚓ tool_guard: answered instead")
    expect(calls.nth(1).locator(".outcome")).to_contain_text("the tool_guard hook refused")

    rejected = page.locator(".ev.error.went-on")
    expect(rejected).to_have_count(1)
    expect(rejected).to_contain_text("Error · output_invalid (went on)")
    expect(rejected).to_contain_text("the answer is not JSON")
    rejected.locator(".rejected summary").click()
    expect(rejected.locator(".rejected pre")).to_have_text("Paris, I think.")

    answer = page.locator(".ev.agent_message").last
    expect(answer.locator(".chip.hook")).to_have_text("⚓ redact: rewrote")
    structured = answer.locator(".structured pre")
    assert json.loads(structured.inner_text()) == {"city": "Paris", "contact": "[redacted]"}
    assert "ada@example.com" not in page.locator("#timeline").inner_text()
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in api.events(session["id"])]
    answer.scroll_into_view_if_needed()
    screenshot(page, "timeline-control")
    page.set_viewport_size(NARROW)  # type: ignore[arg-type]
    answer.scroll_into_view_if_needed()
    screenshot(page, "timeline-control-narrow")

    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/playground/?session={session['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    expect(page.locator(".msg.error.went-on .bubble")).to_contain_text("output_invalid: answer 1")
    bubble = page.locator(".msg.agent.structured .bubble")
    expect(bubble).to_contain_text('"contact": "[redacted]"')
    screenshot(page, "playground-control")

    page.goto("/sessions/?status=degraded")
    row = page.locator(f"tr[data-session='{session['id']}']")
    expect(row.locator(".badge.degraded")).to_have_text("degraded")
    expect(page.locator("#id_status")).to_have_value("degraded")
    screenshot(page, "sessions-degraded")
