"""The MCP servers page in Chromium: register an HTTP server pointing at the test MCP
server (tests/support/mcp_server.py), test its connection and see its tools, with the
header value never shown."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import screenshot
from tests.support.mcp_server import serve_http

SECRET = "e2e-mcp-header-CANARY-91d2"


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


def test_register_an_http_server_and_see_its_tools(page: Page, mcp_url: str) -> None:
    page.goto("/")
    page.get_by_role("link", name="MCP servers").click()
    expect(page.get_by_test_id("mcp-empty")).to_contain_text('"mcp": [{"server": "docs"')
    page.get_by_role("link", name="+ New HTTP server").first.click()

    page.fill("#id_name", "9 docs")
    page.fill("#id_url", mcp_url)
    page.fill("#id_description", "The test suite's MCP server")
    page.fill("#id_headers", f"Authorization: Bearer {SECRET}")
    page.get_by_role("button", name="Register").click()
    expect(page.locator("[data-field=name] .field-error")).to_contain_text("letters, digits")
    expect(page.locator("#id_headers")).to_have_value("")  # never sent back
    expect(page.get_by_test_id("headers-again")).to_be_visible()
    assert SECRET not in page.content()
    screenshot(page, "mcp-server-edit")

    page.fill("#id_name", "docs")
    page.fill("#id_headers", f"Authorization: Bearer {SECRET}")
    page.get_by_role("button", name="Register").click()

    row = page.locator("[data-mcp-server=docs]")
    expect(page.locator(".alert.success")).to_have_text("Registered MCP server docs.")
    expect(row).to_contain_text(mcp_url)
    expect(row).to_contain_text("Headers: Authorization")
    assert SECRET not in page.content()

    row.get_by_role("button", name="Test connection").click()
    expect(page.get_by_test_id("check-status")).to_have_text("Connected")
    tools = page.get_by_test_id("mcp-tools")
    expect(tools.locator("td.mono", has_text="add")).to_have_count(1)
    expect(tools.locator("td.mono", has_text="echo")).to_have_count(1)
    resources = page.get_by_test_id("mcp-resources")
    expect(resources.locator("td.mono", has_text="guide://readme")).to_have_count(1)
    expect(page.get_by_test_id("mcp-prompts")).to_contain_text("review(language, code)")
    assert SECRET not in page.content()
    screenshot(page, "mcp-servers")

    page.get_by_role("link", name="MCP servers", exact=True).first.click()
    expect(page.locator("[data-mcp-server=docs]")).to_be_visible()
    screenshot(page, "mcp-servers-list")
