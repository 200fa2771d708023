"""Publishing an agent over A2A from the MCP tokens page, in Chromium against a real
Daphne: the agent's card is served once it is published (to a token of its owner's)
and refused again once it is withdrawn; the page at 1280 and 390 px wide. A remote
agent registered on its page (demo's own published agent, over loopback), its card
shown with the markup of its text as text; the pages in light and dark at a phone's, a
tablet's and a laptop's width."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.e2e.page_checks import Visit, look_at
from tests.support.daphne_server import DaphneServer

WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}
TOKEN = (
    "from django.contrib.auth import get_user_model; from studio import services; "
    "print(services.create_token(get_user_model().objects.get(username='demo'), 'a2a')[1])"
)


def card_status(url: str, token: str) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def test_an_agent_is_published_over_a2a_and_withdrawn(
    page: Page, pages_server: DaphneServer, api: Api
) -> None:
    api.model("a2a-model", script=[{"text": "hi"}], loop=True)
    api.agent({"name": "a2a-helper", "model": "a2a-model", "instruction": "."}, "<b>Helps</b>.")
    token = pages_server.manage("shell", "-c", TOKEN).stdout.strip().splitlines()[-1]
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/mcp-tokens/")
    row = page.locator("[data-a2a-agent='a2a-helper']")
    expect(row).to_contain_text("not published")
    row.get_by_role("button", name="Publish").click()
    expect(page.locator(".alert.success")).to_contain_text("Published a2a-helper over A2A")
    card_url = row.get_by_test_id("a2a-card-url").inner_text()
    assert card_url.startswith(pages_server.url + "/a2a/")
    status, card = card_status(card_url, token)
    assert status == 200 and card["name"] == "a2a-helper"
    page.locator("[data-testid='a2a-agents']").scroll_into_view_if_needed()
    screenshot(page, "a2a-agents-1280")
    page.set_viewport_size(NARROW)  # type: ignore[arg-type]
    page.locator("[data-testid='a2a-agents']").scroll_into_view_if_needed()
    screenshot(page, "a2a-agents-390")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    row.get_by_role("button", name="Withdraw").click()
    expect(page.locator(".alert.success")).to_contain_text("Withdrew a2a-helper from A2A")
    expect(row).to_contain_text("not published")
    assert card_status(card_url, token)[0] == 404


def test_the_builder_draws_the_a2a_tools_settings(
    page: Page, pages_server: DaphneServer, api: Api
) -> None:
    api.model("a2a-builder-model", script=[{"text": "hi"}], loop=True)
    registration = {"name": "remote-echo", "url": "http://127.0.0.1:9/"}
    api.post("/api/remote-agents/", {**registration, "description": "Echoes (A2A)."})
    tool = {"name": "a2a", "settings": {"servers": ["remote-echo"]}}
    spec = {"name": "a2a-caller", "model": "a2a-builder-model", "instruction": ".", "tools": [tool]}
    agent = api.agent(spec)
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/agents/{agent['id']}/")
    field = page.locator("[data-field='tools.0.settings.servers']")
    expect(field.locator("textarea")).to_have_value("remote-echo")
    expect(field).to_contain_text("Yours: remote-echo.")  # the help names the owner's
    field.scroll_into_view_if_needed()
    screenshot(page, "a2a-builder-1280")


PUBLISH = (
    "from studio.models import Agent; from studio.services import a2a_serving; "
    "a2a_serving.set_a2a_published(Agent.objects.get(name='self-helper'), True)"
)


def test_a_call_over_a2a_is_drawn_nested_in_the_callers_timeline(
    page: Page, pages_server: DaphneServer, api: Api
) -> None:
    api.model("self-helper-model", script=[{"text": "The <i>remote</i> answer."}], loop=True)
    helper = api.agent({"name": "self-helper", "model": "self-helper-model", "instruction": "."})
    pages_server.manage("shell", "-c", PUBLISH)
    token = pages_server.manage("shell", "-c", TOKEN).stdout.strip().splitlines()[-1]
    api.post(
        "/api/remote-agents/",
        {
            "name": "helper-over-a2a",
            "url": f"{pages_server.url}/a2a/{helper['id']}/",
            "token": token,
            "description": "Demo's own helper, over A2A.",
        },
    )
    ask = {"tool_calls": [{"name": "a2a_helper-over-a2a", "args": {"request": "help me"}}]}
    api.model("a2a-asker-model", script=[ask, {"text": "Thanks, done."}], loop=False)
    tool = {"name": "a2a", "settings": {"servers": ["helper-over-a2a"]}}
    asker = api.agent(
        {"name": "a2a-asker", "model": "a2a-asker-model", "instruction": ".", "tools": [tool]}
    )
    session = api.post("/api/sessions/", {"agent": asker["id"]})
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    api.post(f"/api/sessions/{session['id']}/messages/", {"text": "ask the helper"})
    expect(page.locator(".inv .badge").first).to_have_text("succeeded", timeout=30_000)
    expect(page.locator("body")).to_contain_text("The <i>remote</i> answer.")
    screenshot(page, "a2a-nested-timeline-1280", full_page=True)


MARKED = (
    "from studio.models import Agent; from studio.services import a2a_serving; "
    "a2a_serving.set_a2a_published(Agent.objects.get(name='marked-helper'), True)"
)


def test_a_remote_agent_is_registered_and_its_card_shown_as_text(
    page: Page, browser: Browser, pages_server: DaphneServer, api: Api, signed_in: Any
) -> None:
    api.model("marked-model", script=[{"text": "hi"}], loop=True)
    spec = {"name": "marked-helper", "model": "marked-model", "instruction": "."}
    helper = api.agent(spec, "<script>alert(1)</script> <b>Helps</b>.")
    pages_server.manage("shell", "-c", MARKED)
    token = pages_server.manage("shell", "-c", TOKEN).stdout.strip().splitlines()[-1]
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto("/remote-agents/")
    page.get_by_role("link", name="+ New remote agent").first.click()
    page.get_by_label("Name").fill("marked")
    page.get_by_label("A2A base URL").fill("http://169.254.169.254/")
    page.get_by_role("button", name="Register").click()
    refused = page.locator("[data-field='url'] .field-error")
    expect(refused).to_contain_text("STUDIO_OUTBOUND_ALLOWLIST")
    page.get_by_label("A2A base URL").fill(f"{pages_server.url}/a2a/{helper['id']}/")
    page.get_by_label("Token").fill(token)
    page.get_by_role("button", name="Register").click()
    expect(page.locator(".alert.success")).to_contain_text("Registered remote agent marked")
    row = page.locator("[data-remote-agent='marked']")
    expect(row.get_by_test_id("card-name")).to_have_text("marked-helper")
    expect(row.get_by_test_id("card-description")).to_contain_text(
        "<script>alert(1)</script> <b>Helps</b>."
    )
    assert token not in page.content()
    row.get_by_role("button", name="Read card again").click()
    expect(page.locator(".alert.success")).to_contain_text("its card was read")
    remote = api.get("/api/remote-agents/")["results"][0]
    pages = {"list": "/remote-agents/", "edit": f"/remote-agents/{remote['id']}/"}
    problems = []
    for scheme in ("light", "dark"):
        context = browser.new_context(
            base_url=pages_server.url,
            storage_state=signed_in,
            color_scheme=scheme,  # type: ignore[arg-type]
        )
        for name, path in pages.items():
            problems += look_at(context, pages_server.url, Visit(path, name), f"remote-{scheme}")
        context.close()
    assert problems == [], "\n".join(problems)
