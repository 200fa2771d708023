"""Building an agent in the browser and running it: sign in, builder, playground, timeline."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from playwright.sync_api import Page, expect

from studio.agents.demo import DEMO_AGENTS
from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows
from tests.support.daphne_server import DaphneServer

STREAM_RECORDER = """() => {
  window.__streamed = [];
  new MutationObserver(() => {
    for (const el of document.querySelectorAll('.msg.provisional .bubble')) {
      window.__streamed.push(el.textContent);
    }
  }).observe(document.getElementById('transcript'),
             {subtree: true, childList: true, characterData: true});
}"""


SCRIPT_TAG = re.compile(r"<script\b[^>]*>", re.IGNORECASE)
INLINE_HANDLER = re.compile(r"<[^>]+\s(on[a-z]+|style)\s*=", re.IGNORECASE)


def test_every_page_is_served_under_a_strict_policy_with_no_inline_script(
    page: Page, api: Api
) -> None:
    agent = api.get("/api/agents/")["results"][0]
    model = api.get("/api/models/")["results"][0]
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    paths = [
        "/",
        "/agents/",
        "/agents/new/",
        f"/agents/{agent['id']}/",
        "/models/",
        "/models/new/",
        f"/models/{model['id']}/",
        "/playground/",
        "/sessions/",
        f"/sessions/{session['id']}/",
    ]
    for path in paths:
        response = page.request.get(path)
        assert response.status == 200, path
        policy = response.headers["content-security-policy"]
        assert "script-src 'self' 'nonce-" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        html = response.text()
        nonce = re.search(r"'nonce-([^']+)'", policy)
        assert nonce is not None
        for tag in SCRIPT_TAG.findall(html):
            assert 'type="application/json"' in tag or (
                "src=" in tag and f'nonce="{nonce.group(1)}"' in tag
            ), f"{path}: {tag}"
        assert INLINE_HANDLER.search(html) is None, path


def test_sign_in_lands_on_the_demo_agents_and_sign_out_leaves(
    page: Page, pages_server: DaphneServer
) -> None:
    page.context.clear_cookies()
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    screenshot(page, "sign-in")
    page.click("text=Continue as the demo user")
    expect(page.get_by_test_id("username")).to_have_text("demo")
    cards = page.locator("[data-testid=home-agents] article")
    expect(cards).to_have_count(len(DEMO_AGENTS))
    expect(page.locator("[data-agent=calculator] >> text=Try it")).to_be_visible()
    screenshot(page, "home")
    page.emulate_media(color_scheme="dark")
    screenshot(page, "home-dark")
    page.click("text=Sign out")
    expect(page).to_have_url(re.compile(r"/accounts/login/$"))


def test_an_agent_built_in_the_builder_streams_its_answer_and_shows_its_tool_call(
    page: Page, api: Api
) -> None:
    api.model("slow", token_delay_s=0.04)
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    page.fill("#f-name", "adder")
    page.fill("#f-summary", "Adds things up. Try: what is 6 * 7?")
    page.select_option("#f-model", "slow")
    page.fill(
        "#f-instruction",
        "Work sums out with the calculator.\n"
        "Result: The calculator says the answer is {last_tool_result}, as you might expect.",
    )
    page.get_by_label("calculator", exact=True).check()
    expect(page.locator("#json-editor")).to_have_value(re.compile(r'"name": "calculator"'))
    expect(page.locator("#tree")).to_contain_text("calculator")
    expect(page.locator("#validity")).to_have_text("Valid")
    page.evaluate("window.scrollTo(0, 0)")
    screenshot(page, "builder")
    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v1")
    expect(page).to_have_url(re.compile(r"/agents/[0-9a-f-]{36}/$"))

    page.click("#try-it")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.evaluate(STREAM_RECORDER)
    page.click("#suggestion button")
    answer = "The calculator says the answer is 42, as you might expect."
    expect(page.locator(".msg.agent[data-seq] .bubble")).to_have_text(answer)
    expect(page.locator(".msg.provisional")).to_have_count(0)
    streamed = page.evaluate("window.__streamed")
    growing = sorted(set(streamed), key=len)
    assert len(growing) >= 3, streamed  # token by token, not all at once
    assert all(answer.startswith(prefix.strip()) for prefix in growing)
    expect(page.locator(".msg.tool")).to_contain_text("→ 42")
    screenshot(page, "playground")

    page.click("#open-timeline")
    expect(page.locator("#conn")).to_have_text("Live")
    tool = page.locator(".tool[data-tool=calculator]")
    expect(tool.locator(".outcome")).to_have_text("→ 42")
    tool.locator("summary").click()
    expect(tool.locator(".tool-body")).to_contain_text('"expression": "6 * 7"')
    expect(page.locator(".inv .badge").first).to_have_text("succeeded")
    session_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    stored = [(e["seq"], e["type"]) for e in api.events(session_id)]
    assert timeline_rows(page) == stored
    screenshot(page, "timeline", full_page=True)
    page.emulate_media(color_scheme="dark")
    screenshot(page, "timeline-dark", full_page=True)


def test_the_playgrounds_recent_sessions_say_when_each_started(page: Page, api: Api) -> None:
    """Sessions that asked the same thing have the same title: each says when it started,
    as the timeline's header does ("Started Dec 8, 01:46", UTC), newest first."""
    api.model("recent-model")
    agent = api.agent({"name": "recent", "model": "recent-model", "instruction": "."})
    made = [
        api.post("/api/sessions/", {"agent": agent["id"], "title": "Plan a weekend in Rome"})
        for _ in range(2)
    ]
    page.goto(f"/playground/?agent={agent['id']}")
    links = page.locator("#session-list li a")
    expect(links).to_have_count(2)
    newest_first = sorted(made, key=lambda s: s["created_at"], reverse=True)
    for link, session in zip(links.all(), newest_first, strict=True):
        expect(link.locator(".title")).to_have_text("Plan a weekend in Rome")
        started = datetime.fromisoformat(session["created_at"]).astimezone(UTC)
        when = f"{started:%b} {started.day}, {started:%H:%M}"
        expect(link.locator("time.when")).to_have_text(when)
        expect(link.locator("time.when")).to_have_attribute("datetime", session["created_at"])
    links.first.click()
    expect(page).to_have_url(re.compile(f"session={newest_first[0]['id']}$"))
    expect(links.first).to_have_attribute("aria-current", "true")
    expect(links.first.locator("time.when")).to_be_visible()


def test_form_and_json_stay_in_sync_and_errors_show_at_their_spec_path(
    page: Page, api: Api
) -> None:
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    page.fill("#f-name", "router")
    editor = page.locator("#json-editor")
    expect(editor).to_have_value(re.compile(r'"name": "router"'))

    spec = json.loads(editor.input_value())
    spec["sub_agents"] = [{"name": "helper", "model": "no_such_model", "instruction": "hi"}]
    editor.fill(json.dumps(spec, indent=2))
    editor.blur()
    expect(page.locator("#tree")).to_contain_text("helper")
    expect(page.locator("#validity")).to_have_text("1 problem")
    page.click("#problems-count")
    problem = page.locator("#problems button", has_text="sub_agents.0.model")
    expect(problem).to_contain_text("no_such_model")

    problem.click()
    expect(page.locator("#form-heading")).to_have_text("helper")
    field = page.locator("[data-field='sub_agents.0.model']")
    expect(field.locator(".field-error")).to_contain_text("no_such_model")
    page.select_option("#f-sub_agents-0-model", "scripted")
    expect(editor).to_have_value(re.compile(r'"model": "scripted"'))
    expect(page.locator("#validity")).to_have_text("Valid")

    editor.fill("{ not json")
    editor.blur()
    expect(page.locator("#json-status")).to_contain_text("Invalid JSON")
    expect(page.locator("#tree")).to_contain_text("helper")  # the last good spec stays


def test_version_history_shows_a_diff_and_restores_an_old_version(page: Page, api: Api) -> None:
    agent = api.agent(
        {"name": "poet", "model": "scripted", "instruction": "Reply: Roses are red."}, "v1"
    )
    api.patch(
        f"/api/agents/{agent['id']}/",
        {"spec": {**agent["spec"], "instruction": "Reply: Violets are blue."}, "note": "bluer"},
    )
    page.goto(f"/agents/{agent['id']}/")
    expect(page.locator("#version-badge")).to_have_text("v2")
    page.fill("#f-instruction", "Reply: Sugar is sweet.")
    page.fill("#version-note", "sweeter")
    page.keyboard.press("Control+s")
    expect(page.locator("#version-badge")).to_have_text("v3")

    page.click("#tab-history")
    expect(page.locator("#versions li")).to_have_count(3)
    page.select_option("#compare-from", "1")
    page.select_option("#compare-to", "3")
    page.click("#compare")
    diff = page.locator("#diff-body .diff")
    expect(diff.locator(".del")).to_contain_text("Roses are red.")
    expect(diff.locator(".add")).to_contain_text("Sugar is sweet.")
    screenshot(page, "builder-version-diff")
    page.click("#diff-close")

    page.click("#versions li[data-version='1'] >> text=Restore")
    page.locator("dialog").get_by_role("button", name="Restore v1").click()
    expect(page.locator("#version-badge")).to_have_text("v4")
    expect(page.locator("#f-instruction")).to_have_value("Reply: Roses are red.")
    latest = api.get(f"/api/agents/{agent['id']}/versions/4/")
    assert latest["spec"]["instruction"] == "Reply: Roses are red."
    assert latest["note"] == "restored from v1"


def test_agents_list_searches_duplicates_exports_imports_and_deletes(
    page: Page, api: Api, tmp_path_factory: object
) -> None:
    page.goto("/agents/")
    page.keyboard.press("/")
    page.keyboard.type("pipe")
    page.keyboard.press("Enter")
    expect(page.locator("[data-testid=agent-table] tbody tr")).to_have_count(1)
    screenshot(page, "agents")

    page.click("[data-agent=pipeline] >> text=Duplicate")
    expect(page.locator("#agent-title")).to_have_text("pipeline_copy")

    page.goto("/agents/")
    with page.expect_download() as download:
        page.click("[data-agent=pipeline_copy] >> text=Export")
    document = json.loads(download.value.path().read_text())
    assert document["spec"]["type"] == "sequential"
    document["name"] = "pipeline_imported"
    document["spec"]["name"] = "pipeline_imported"
    page.set_input_files(
        "#import-file",
        files=[
            {
                "name": "agent.json",
                "mimeType": "application/json",
                "buffer": json.dumps(document).encode(),
            }
        ],
    )
    expect(page.locator("#agent-title")).to_have_text("pipeline_imported")

    page.goto("/agents/")
    page.click("[data-agent=pipeline_copy] >> text=Delete")
    page.locator("dialog").get_by_role("button", name="Delete agent").click()
    expect(page.locator(".alert.success")).to_contain_text("Deleted agent pipeline_copy")
    expect(page.locator("[data-agent=pipeline_copy]")).to_have_count(0)
    names = {agent["name"] for agent in api.get("/api/agents/")["results"]}
    assert {"pipeline", "pipeline_imported"} <= names
    assert "pipeline_copy" not in names


def test_on_a_phone_an_agents_buttons_are_under_its_name_not_past_the_edge(page: Page) -> None:
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/agents/")
    row = page.locator("tr[data-agent=calculator]")
    try_it = row.get_by_role("link", name="Try", exact=True)
    expect(try_it).to_be_in_viewport(ratio=1)
    expect(row.get_by_role("button", name="Delete")).to_be_visible()
    table = page.get_by_test_id("agent-table")
    assert table.evaluate("(el) => el.scrollWidth <= window.innerWidth")
    screenshot(page, "agents-phone")
    try_it.click()
    expect(page.locator("#agent-picker option:checked")).to_have_text("calculator")


def test_models_page_never_shows_a_key_and_tests_connections(page: Page, api: Api) -> None:
    secret = "sk-live-do-not-show-0123456789"
    page.goto("/models/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "models")
    page.fill("#m-name", "remote")
    page.select_option("#m-provider", "openai_compatible")
    page.fill("#m-model", "gpt-test")
    page.fill("#m-key", secret)
    page.fill("#m-opt-timeout-s", "2")
    page.click("text=Save")
    expect(page).to_have_url(re.compile(r"/models/$"))
    # The list is server-rendered before its module loads: wait for the handlers.
    expect(page.locator("body")).to_have_attribute("data-ready", "models")
    row = page.locator("[data-model=remote]")
    expect(row).to_contain_text("6789")
    assert secret not in page.content()

    page.locator("[data-model=scripted] >> text=Test connection").click()
    result = page.locator("[data-model=scripted] [data-test-result]")
    expect(result).to_have_text("OK: scripted models run offline")
    screenshot(page, "models")

    row.locator("text=Edit").click()
    expect(page.locator("#m-key")).to_have_value("")
    assert secret not in page.content()
    page.fill("#m-opt-timeout-s", "soon")
    page.click("text=Save")
    timeout = page.locator("[data-field='options.timeout_s'] .field-error")
    expect(timeout).to_contain_text("Input should be a valid number")
    page.fill("#m-opt-timeout-s", "")
    page.fill("#m-base-url", "ftp://example.com/v1")
    page.click("text=Save")
    expect(page.locator("[data-field=base_url] .field-error")).to_be_visible()
    screenshot(page, "model-edit")


def test_sessions_list_filters_pages_and_deletes(page: Page, api: Api) -> None:
    agents = {a["name"]: a["id"] for a in api.get("/api/agents/")["results"]}
    sessions = [
        api.post("/api/sessions/", {"agent": agents["poet" if "poet" in agents else "calculator"]})
        for _ in range(27)
    ]
    api.post("/api/sessions/", {"agent": agents["fan_out"], "title": "a needle in the haystack"})
    page.goto("/sessions/")
    expect(page.locator(".pager")).to_contain_text("page 1 of 2")
    page.click("text=Older →")
    expect(page.locator(".pager")).to_contain_text("page 2 of 2")
    page.goto("/sessions/")
    page.fill("#id_q", "needle")
    page.click("text=Filter")
    expect(page.locator("[data-testid=session-table] tbody tr")).to_have_count(1)
    page.select_option("#id_agent", label="calculator")
    page.click("text=Filter")
    expect(page.locator(".empty")).to_contain_text("No sessions match")
    page.goto("/sessions/?status=idle")
    screenshot(page, "sessions")
    first = page.locator("[data-testid=session-table] tbody tr").first
    doomed = first.get_attribute("data-session")
    first.locator("text=Delete").click()
    page.locator("dialog").get_by_role("button", name="Delete session").click()
    expect(page.locator(".alert.success")).to_contain_text("Deleted session")
    expect(page).to_have_url(re.compile(r"/sessions/\?status=idle$"))
    assert doomed not in {s["id"] for s in api.get("/api/sessions/")["results"]}
    assert len(sessions) == 27
