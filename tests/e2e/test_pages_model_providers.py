"""The model form in Chromium for Anthropic, Gemini and Ollama: each provider shows its
own fields (no key for Ollama) and its own service as the default base URL; a config
saved there passes its connection test against an in-repo server speaking that
provider's wire format, reached as ``localhost`` (the only name the server allows)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403
from tests.e2e.browser import screenshot
from tests.support.anthropic_server import AnthropicServer
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.gemini_server import GeminiServer
from tests.support.ollama_server import OllamaServer
from tests.support.wire_server import WireServer

SECRET = "sk-live-do-not-show-0123456789"
SERVERS: dict[str, type[WireServer]] = {
    "anthropic": AnthropicServer,
    "gemini": GeminiServer,
    "ollama": OllamaServer,
}


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    data = tmp_path_factory.mktemp("studio") / "data"
    env = {"STUDIO_OUTBOUND_ALLOWLIST": "localhost"}
    with daphne_server(data, env, template=seeded_data) as server:
        yield server


@pytest.mark.parametrize("provider", sorted(SERVERS))
def test_each_provider_is_configured_on_the_page_and_its_connection_tested(
    page: Page, provider: str
) -> None:
    with SERVERS[provider]() as server:
        page.goto("/models/new/")
        expect(page.locator("body")).to_have_attribute("data-ready", "models")
        page.select_option("#m-provider", provider)
        expect(page.locator("[data-field=api_key]")).to_be_visible(visible=provider != "ollama")
        expect(page.locator("[data-default-base-url]")).not_to_have_text("OpenAI")
        page.fill("#m-name", f"page-{provider}")
        page.fill("#m-base-url", server.base_url.replace("127.0.0.1", "localhost"))
        page.fill("#m-model", "test-model")
        if provider != "ollama":
            page.fill("#m-key", SECRET)
        screenshot(page, f"model-{provider}-form", full_page=True)
        page.click("button[type=submit] >> text=Save")
        expect(page).to_have_url(re.compile(r"/models/$"))
        expect(page.locator("body")).to_have_attribute("data-ready", "models")

        server.reply("ok")
        row = page.locator(f"[data-model=page-{provider}]")
        row.locator("text=Test connection").click()
        expect(row.locator("[data-test-result]")).to_have_text(re.compile(r"^OK: localhost:"))
        sent = server.requests[-1].headers
        key = sent.get("x-goog-api-key") or sent.get("authorization", "").removeprefix("Bearer ")
        assert key == ("" if provider == "ollama" else SECRET)
        assert SECRET not in page.content()
        screenshot(page, f"models-list-{provider}", full_page=True)
