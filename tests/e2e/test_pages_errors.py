"""The error pages as a visitor meets them, on a Daphne with ``STUDIO_DEBUG=0`` (Django
shows its technical 404 and 500 pages with DEBUG on): pages of the app, with its
layout, the navigation for a signed-in user, words saying what happened and a way back,
clean and fitting a phone, a tablet, a laptop and a desktop (tests/e2e/page_checks.py).
Under /api/ errors stay the API's JSON. The 500 page is checked in
tests/studio/test_error_pages.py (no page of the app fails on purpose)."""

from __future__ import annotations

import json
import shutil
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import TIMEOUT_MS, screenshot
from tests.e2e.page_checks import Visit, look_at
from tests.support.daphne_server import DaphneServer, daphne_server

STAFF_ONLY = "Only staff can register or change stdio MCP servers."


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    """Studio with DEBUG off, on a copy of the seeded data (its secrets from its files,
    as an operator would set them) and its static files collected."""
    data = tmp_path_factory.mktemp("studio") / "data"
    shutil.copytree(seeded_data, data)
    env = {
        "STUDIO_DEBUG": "0",
        "STUDIO_SECRET_KEY": (data / "secret_key").read_text().strip(),
        "STUDIO_FIELD_ENCRYPTION_KEYS": (data / "field_encryption_key").read_text().strip(),
    }
    DaphneServer(data, env).manage("collectstatic", "--noinput")
    with daphne_server(data, env) as server:
        yield server


@pytest.fixture(scope="module")
def demo(
    browser: Browser, pages_server: DaphneServer, signed_in: dict[str, Any]
) -> Iterator[BrowserContext]:
    context = browser.new_context(
        base_url=pages_server.url,
        storage_state=signed_in,  # type: ignore[arg-type]
        viewport={"width": 390, "height": 844},
    )
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture(scope="module")
def signed_out(browser: Browser, pages_server: DaphneServer) -> Iterator[BrowserContext]:
    context = browser.new_context(base_url=pages_server.url, viewport={"width": 390, "height": 844})
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


MISSING_AGENT = f"/agents/{uuid.uuid4()}/"
VISITS = [
    ("demo", Visit(MISSING_AGENT, "404", 404)),
    ("demo", Visit("/mcp-servers/new/stdio/", "403-stdio", 403)),
    ("signed_out", Visit("/no-such-page/", "404-signed-out", 404)),
]


@pytest.mark.parametrize(("who", "visit"), VISITS, ids=[v.name for _, v in VISITS])
def test_an_error_page_is_clean_and_fits_a_phone_a_tablet_a_laptop_and_a_desktop(
    request: pytest.FixtureRequest, pages_server: DaphneServer, who: str, visit: Visit
) -> None:
    context: BrowserContext = request.getfixturevalue(who)
    assert look_at(context, pages_server.url, visit, "errors") == []


def shown(context: BrowserContext, path: str) -> Page:
    page = context.new_page()
    page.goto(path)
    return page


def test_a_missing_object_is_the_apps_404_with_a_way_back_to_its_list(
    demo: BrowserContext,
) -> None:
    page = shown(demo, MISSING_AGENT)
    expect(page.get_by_role("heading", level=1)).to_have_text("There is nothing here")
    expect(page.get_by_test_id("error-path")).to_have_text(MISSING_AGENT)
    expect(page.get_by_role("link", name="Back to Agents")).to_have_attribute("href", "/agents/")
    expect(page.get_by_role("link", name="Go to the home page")).to_have_attribute("href", "/")
    expect(page.locator("link[rel=icon]")).to_have_attribute(
        "href", "/static/studio/img/favicon.svg"
    )
    # A phone: the navigation is folded behind the menu button, and opens from it.
    navigation = page.get_by_role("navigation", name="Main")
    expect(navigation).to_be_hidden()
    page.get_by_role("button", name="Menu").click()
    expect(navigation).to_be_visible()
    expect(navigation.locator("[aria-current=page]")).to_have_text("Agents")
    screenshot(page, "menu-open")
    page.keyboard.press("Escape")
    expect(navigation).to_be_hidden()


def test_registering_a_stdio_server_as_non_staff_is_the_apps_403_saying_why(
    demo: BrowserContext, pages_server: DaphneServer
) -> None:
    page = shown(demo, "/mcp-servers/new/stdio/")
    expect(page.get_by_role("heading", level=1)).to_have_text("You are not allowed to do this")
    expect(page.get_by_test_id("error-reason")).to_have_text(STAFF_ONLY)
    page.get_by_role("link", name="Back to MCP servers").click()
    expect(page).to_have_url(f"{pages_server.url}/mcp-servers/")


def test_signed_out_a_missing_page_is_the_apps_404_without_the_navigation(
    signed_out: BrowserContext,
) -> None:
    page = shown(signed_out, "/no-such-page/")
    expect(page.get_by_role("heading", level=1)).to_have_text("There is nothing here")
    expect(page.locator(".topnav")).to_have_count(0)
    expect(page.get_by_role("link", name="Go to the home page")).to_be_visible()


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def test_api_errors_stay_json_under_the_api(pages_server: DaphneServer) -> None:
    status, kind, body = get(f"{pages_server.url}/api/no-such-thing/")
    assert (status, kind) == (404, "application/json")
    assert json.loads(body) == {"code": "not_found", "detail": "Not found."}
    status, kind, body = get(f"{pages_server.url}/api/agents/")
    assert (status, kind) == (401, "application/json")
    assert set(json.loads(body)) == {"code", "detail"}


def test_favicon_ico_is_studios_icon(pages_server: DaphneServer) -> None:
    status, kind, body = get(f"{pages_server.url}/favicon.ico")
    assert (status, kind) == (200, "image/svg+xml")
    assert body.startswith(b"<svg")
