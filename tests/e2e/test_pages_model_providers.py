"""The model form in Chromium for every provider: its preset picks the native provider,
which shows its own fields (no key for Ollama), its own service as the default base
URL and its own labelled option inputs; options are built from the inputs, refused
field by field, filled back from a stored config, and options stored earlier that no
input stands for are kept unless removed. A config saved there passes its connection
test against an in-repo server speaking that provider's wire format, reached as
``localhost`` (the only name the server allows)."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403
from tests.e2e.browser import Api, screenshot
from tests.support.anthropic_server import AnthropicServer
from tests.support.daphne_server import DB_FILE, DaphneServer, daphne_server
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
        page.select_option("#m-preset", provider)
        expect(page.locator("#m-provider")).to_have_value(provider)
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
        # The server imports the provider's SDK at its first test (anthropic's took over
        # 15 s on a slow day's two busy cores): a longer bound against a hang.
        tested = row.locator("[data-test-result]")
        expect(tested).to_have_text(re.compile(r"^OK: localhost:"), timeout=60_000)
        sent = server.requests[-1].headers
        key = sent.get("x-goog-api-key") or sent.get("authorization", "").removeprefix("Bearer ")
        assert key == ("" if provider == "ollama" else SECRET)
        assert SECRET not in page.content()
        screenshot(page, f"models-list-{provider}", full_page=True)


# The labels of the inputs shown at once, per provider (the rest under "More options").
MAIN_OPTIONS = {
    "openai_compatible": [
        "Temperature",
        "Max output tokens",
        "Reasoning effort",
        "Timeout (seconds)",
        "Takes images",
    ],
    "anthropic": [
        "Max output tokens",
        "Temperature",
        "Thinking budget (tokens)",
        "Timeout (seconds)",
        "Takes images and PDFs",
    ],
    "gemini": [
        "Max output tokens",
        "Temperature",
        "Thinking budget (tokens)",
        "Timeout (seconds)",
        "Takes images",
    ],
    "ollama": [
        "Context window (tokens)",
        "Max output tokens",
        "Temperature",
        "Keep loaded",
        "Timeout (seconds)",
        "Takes images",
    ],
    "scripted": [
        "Pause before each answer (seconds)",
        "Pause between words (seconds)",
        "Start the script again when it ends",
    ],
}


def shoot(page: Page, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar stays on top
    screenshot(page, name, full_page=True)


def open_form(page: Page, path: str = "/models/new/") -> None:
    page.goto(path)
    expect(page.locator("body")).to_have_attribute("data-ready", "models")


def test_only_the_chosen_providers_option_inputs_show_light_and_dark(page: Page) -> None:
    open_form(page)
    options = page.locator("[data-field=options]")
    for provider, labels in MAIN_OPTIONS.items():
        page.select_option("#m-provider", provider)
        shown = options.locator(".options-grid").first.locator("[data-option] label")
        expect(shown).to_have_text(labels)
        more = options.locator("details.more-options")
        expect(more).not_to_have_attribute("open", "")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
            suffix = "" if scheme == "light" else "-dark"
            shoot(page, f"model-options-{provider}{suffix}")
        page.emulate_media(color_scheme="light")
    page.select_option("#m-provider", "openai_compatible")
    expect(page.locator("#m-opt-reasoning-effort option")).to_have_text(
        ["Provider's default", "minimal", "low", "medium", "high"]
    )
    expect(page.locator("#m-opt-thinking-budget")).to_have_count(0)
    page.locator("details.more-options summary").click()
    shoot(page, "model-options-openai_compatible-more")


def test_options_come_from_the_inputs_and_a_bad_one_is_refused_at_its_input(
    page: Page, api: Api
) -> None:
    open_form(page)
    page.select_option("#m-preset", "anthropic")
    page.fill("#m-name", "thinker")
    page.fill("#m-base-url", "http://localhost:9")  # saving resolves it; no DNS here
    page.fill("#m-key", SECRET)
    expect(page.locator("#m-opt-vision")).to_be_checked()  # Claude's default
    page.fill("#m-opt-max-tokens", "2048")
    page.fill("#m-opt-thinking-budget", "4096")
    page.fill("#m-opt-timeout-s", "soon")
    page.click("button[type=submit] >> text=Save")
    budget = page.locator("[data-field='options.thinking_budget'] .field-error")
    expect(budget).to_have_text("the thinking budget must be less than max_tokens")
    timeout = page.locator("[data-field='options.timeout_s'] .field-error")
    expect(timeout).to_contain_text("Input should be a valid number")
    shoot(page, "model-options-refused")

    page.fill("#m-opt-thinking-budget", "1536")
    page.fill("#m-opt-timeout-s", "")
    page.uncheck("#m-opt-vision")
    page.locator("details.more-options summary").click()
    page.fill("#m-opt-stop-sequences", "END\n\n  STOP ")
    page.click("button[type=submit] >> text=Save")
    expect(page).to_have_url(re.compile(r"/models/$"))
    saved = next(m for m in api.get("/api/models/")["results"] if m["name"] == "thinker")
    assert saved["provider"] == "anthropic"
    assert saved["options"] == {
        "max_tokens": 2048,
        "thinking_budget": 1536,
        "vision": False,
        "stop_sequences": ["END", "STOP"],
    }


def test_stored_options_fill_the_inputs_and_unknown_ones_are_kept_until_removed(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    options = {"temperature": 0.3, "reasoning_effort": "high", "seed": 7}
    created = api.post(
        "/api/models/",
        {"name": "older", "provider": "openai_compatible", "model": "m", "options": options},
    )
    # An option an earlier Studio stored, which this one no longer takes.
    stored = {**options, "logprobs": True, "note": "<img src=x onerror=alert(1)>"}
    with sqlite3.connect(pages_server.data_dir / DB_FILE) as db:
        db.execute(
            "UPDATE studio_modelconfig SET options = ? WHERE name = 'older'",
            (json.dumps(stored),),
        )
    open_form(page, f"/models/{created['id']}/")
    expect(page.locator("#m-opt-temperature")).to_have_value("0.3")
    expect(page.locator("#m-opt-reasoning-effort")).to_have_value("high")
    expect(page.locator("details.more-options")).to_have_attribute("open", "")  # seed is set
    expect(page.locator("#m-opt-seed")).to_have_value("7")
    others = page.locator("[data-testid=other-options] li")
    expect(others).to_have_text(
        [re.compile(r"^logprobs = true\s*Remove$"), re.compile(r"^note = \"<img src=x")]
    )
    expect(page.locator("[data-testid=other-options] img")).to_have_count(0)  # text, not HTML
    shoot(page, "model-options-unknown-kept")

    page.fill("#m-opt-temperature", "0.5")
    page.click("button[type=submit] >> text=Save")  # kept, so the server names them
    refused = page.locator("[data-field='options.logprobs'] .field-error")
    expect(refused).to_contain_text("not an option of OpenAI-compatible models")
    shoot(page, "model-options-unknown-refused")
    for row in others.all():
        row.locator("input[type=checkbox]").check()
    page.click("button[type=submit] >> text=Save")
    expect(page).to_have_url(re.compile(r"/models/$"))
    saved = api.get(f"/api/models/{created['id']}/")["options"]
    assert saved == {"temperature": 0.5, "reasoning_effort": "high", "seed": 7}
