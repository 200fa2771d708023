"""The Models pages in Chromium: presets fill the form (and stay editable), a refused
address says which setting allows it, the key column shows what the page says it
shows, key inputs are never autofilled, and connection tests fail in words. The
server's allowlist admits only the name ``localhost``, so 127.0.0.1 (Ollama's preset)
is refused while the test model server is reached as ``localhost``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403
from tests.e2e.browser import Api, screenshot
from tests.e2e.test_pages_live import open_timeline, send, wait_for_run_end
from tests.e2e.test_pages_waterfall import assert_page_store_matches_the_api, open_waterfall
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.openai_server import OpenAIServer, TokenUsage, unreachable_base_url

SECRET = "sk-live-do-not-show-0123456789"
NARROW = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    data = tmp_path_factory.mktemp("studio") / "data"
    env = {"STUDIO_OUTBOUND_ALLOWLIST": "localhost"}
    with daphne_server(data, env, template=seeded_data) as server:
        yield server


@pytest.fixture(scope="module")
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


def local_url(server: OpenAIServer) -> str:
    return f"http://localhost:{server.port}/v1"


def assert_fits(page: Page) -> None:
    """Nothing makes the page scroll sideways, once the stylesheet applies (a click that
    navigates can leave the new document's elements findable before it has loaded)."""
    page.wait_for_load_state("load")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the window"


def shoot(page: Page, name: str) -> None:
    page.evaluate("window.scrollTo(0, 0)")  # the sticky top bar stays on top
    screenshot(page, name, full_page=True)


def open_form(page: Page) -> None:
    page.goto("/models/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "models")


def test_presets_fill_the_form_and_every_field_stays_editable(page: Page) -> None:
    open_form(page)
    expect(page.locator("#m-preset")).to_have_value("")
    page.select_option("#m-preset", "openai")
    expect(page.locator("#m-provider")).to_have_value("openai_compatible")
    expect(page.locator("#m-base-url")).to_have_value("https://api.openai.com/v1")
    expect(page.locator("#m-model")).to_have_value("gpt-4o-mini")
    expect(page.locator("#m-name")).to_have_value("openai")
    expect(page.locator("[data-preset-note]")).to_contain_text("OpenAI API key")

    page.select_option("#m-preset", "anthropic")
    expect(page.locator("#m-provider")).to_have_value("anthropic")  # its own API
    expect(page.locator("#m-base-url")).to_have_value("https://api.anthropic.com")
    expect(page.locator("#m-model")).to_have_value("claude-sonnet-4-5")
    expect(page.locator("#m-name")).to_have_value("claude")  # still the suggested one
    expect(page.locator("#m-opt-thinking-budget")).to_be_visible()

    page.select_option("#m-preset", "gemini")
    expect(page.locator("#m-provider")).to_have_value("gemini")
    expect(page.locator("#m-base-url")).to_have_value("https://generativelanguage.googleapis.com")

    page.fill("#m-name", "mine")
    page.select_option("#m-preset", "ollama")
    expect(page.locator("#m-provider")).to_have_value("ollama")
    expect(page.locator("#m-base-url")).to_have_value("http://127.0.0.1:11434")
    expect(page.locator("#m-model")).to_have_value("llama3.2")
    expect(page.locator("#m-name")).to_have_value("mine")  # typed: kept
    expect(page.locator("[data-preset-note]")).to_contain_text("No API key needed")
    expect(page.locator("[data-field=api_key]")).to_be_hidden()
    page.fill("#m-model", "qwen2.5")
    expect(page.locator("#m-preset")).to_have_value("ollama")  # a model name is the user's
    page.fill("#m-base-url", "")
    expect(page.locator("#m-preset")).to_have_value("ollama")  # empty: Ollama's own address
    page.fill("#m-base-url", "http://localhost:11434")
    expect(page.locator("#m-preset")).to_have_value("")  # another base URL: custom
    expect(page.locator("[data-preset-note]")).to_contain_text("A preset fills in")
    page.fill("#m-base-url", "http://127.0.0.1:11434")
    page.select_option("#m-preset", "ollama")
    page.select_option("#m-provider", "openai_compatible")
    expect(page.locator("#m-preset")).to_have_value("")  # another provider: custom


def test_stacked_fields_stand_as_far_apart_with_help_as_without(page: Page) -> None:
    """On a phone the form is one column. The name's help ended 29 px above the
    provider, the provider's select 16 px above the base URL: a help line kept a
    paragraph's bottom margin inside its field."""
    page.set_viewport_size(NARROW)  # type: ignore[arg-type]
    open_form(page)
    gaps = page.evaluate(
        """names => names.slice(1).map((name, i) => {
            const field = n => document.querySelector(`[data-field=${n}]`);
            const shown = [...field(names[i]).children].filter(e => e.offsetParent);
            const end = shown[shown.length - 1].getBoundingClientRect().bottom;
            return field(name).getBoundingClientRect().top - end;
        })""",
        ["name", "provider", "base_url"],
    )
    assert page.locator("[data-field=name] .help").is_visible()  # with help, then without
    assert not page.locator("[data-field=provider] .help").is_visible()
    assert abs(gaps[0] - gaps[1]) <= 1, gaps
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]


def test_a_refused_address_says_which_setting_allows_it(
    page: Page, model_server: OpenAIServer
) -> None:
    for viewport, name in ((WIDE, "model-refused"), (NARROW, "model-refused-390")):
        page.set_viewport_size(viewport)  # type: ignore[arg-type]
        open_form(page)
        expect(page.locator("[data-testid=outbound-policy]")).to_contain_text(
            "STUDIO_OUTBOUND_ALLOWLIST"
        )
        page.select_option("#m-preset", "ollama")
        page.click("button[type=submit] >> text=Save")
        error = page.locator("[data-field=base_url] .field-error")
        expect(error).to_contain_text("127.0.0.1 is a loopback address (this machine)")
        expect(error).to_contain_text("operator who runs Studio allows it with the")
        expect(error).to_contain_text("STUDIO_OUTBOUND_ALLOWLIST setting")
        assert_fits(page)
        shoot(page, name)

    page.fill("#m-base-url", local_url(model_server))
    page.click("button[type=submit] >> text=Save")
    expect(page).to_have_url(re.compile(r"/models/$"))
    expect(page.locator("[data-model=ollama] [data-testid=key-shown]")).to_have_text("none")


def test_key_inputs_are_never_filled_by_the_browser(page: Page, api: Api) -> None:
    open_form(page)
    key = page.locator("#m-key")
    expect(key).to_have_attribute("type", "password")
    expect(key).to_have_attribute("autocomplete", "new-password")
    for attribute in ("data-1p-ignore", "data-bwignore"):
        expect(key).to_have_attribute(attribute, "")
    expect(key).to_have_attribute("data-lpignore", "true")
    expect(page.locator("#m-name")).to_have_attribute("autocomplete", "off")
    expect(page.locator("#model-form")).to_have_attribute("autocomplete", "off")
    expect(key).to_have_value("")

    page.goto("/mcp-servers/new/")
    headers = page.locator("textarea[name=headers]")
    expect(headers).to_have_attribute("autocomplete", "off")
    expect(headers).to_have_attribute("data-lpignore", "true")


def test_the_key_column_shows_what_the_page_says_and_tests_fail_in_words(
    page: Page, api: Api, model_server: OpenAIServer
) -> None:
    remote = {"provider": "openai_compatible", "model": "test-model", "api_key": SECRET}
    api.post("/api/models/", remote | {"name": "remote", "base_url": local_url(model_server)})
    down = unreachable_base_url().replace("127.0.0.1", "localhost")
    api.post("/api/models/", remote | {"name": "down", "base_url": down})
    api.post("/api/models/", remote | {"name": "short", "base_url": down, "api_key": "sk-1"})
    page.goto("/models/")
    expect(page.locator("body")).to_have_attribute("data-ready", "models")
    expect(page.locator(".page-head .sub")).to_contain_text(
        "the API key column shows only their last four characters"
    )
    expect(page.locator("[data-model=remote] [data-testid=key-shown]")).to_have_text("ends in 6789")
    # test-model is in no price table and was given none: its cost is unknown, not zero.
    expect(page.locator("[data-model=remote] [data-testid=price-shown]")).to_have_text("unknown")
    expect(page.locator("[data-model=short] [data-testid=key-shown]")).to_have_text(
        "set, none shown"
    )
    assert SECRET not in page.content()

    model_server.reply("ok")
    row = page.locator("[data-model=remote]")
    row.locator("text=Test connection").click()
    result = row.locator("[data-test-result]")
    expect(result).to_have_text(
        re.compile(
            rf"^OK: localhost:{model_server.port} answered as model 'test-model' \(\d+ ms\)$"
        )
    )
    model_server.fail(401, message="Incorrect API key provided")
    row.locator("text=Test connection").click()
    expect(result).to_contain_text(
        f"Failed: {local_url(model_server)}/chat/completions answered 401 Unauthorized: "
        "check the API key"
    )
    down_row = page.locator("[data-model=down]")
    down_row.locator("text=Test connection").click()
    expect(down_row.locator("[data-test-result]")).to_contain_text(
        "Failed: Nothing accepts connections at localhost:"
    )
    assert SECRET not in page.content()
    shoot(page, "models-list")
    page.set_viewport_size(NARROW)  # type: ignore[arg-type]
    assert_fits(page)
    shoot(page, "models-list-390")

    row.locator("text=Edit").click()
    expect(page.locator("#m-key")).to_have_attribute(
        "placeholder", "Stored, ends in 6789. Leave empty to keep it."
    )
    assert_fits(page)
    shoot(page, "model-edit-390")


def test_the_timeline_shows_the_cached_part_of_a_model_calls_input(
    page: Page, api: Api, model_server: OpenAIServer
) -> None:
    cached = {"provider": "openai_compatible", "model": "test-model", "name": "cached"}
    prices = {"price_input": "2.5", "price_cached_input": "1.25", "price_output": "10"}
    api.post("/api/models/", cached | prices | {"base_url": local_url(model_server)})
    spec = {"name": "cacher", "model": "cached", "instruction": "Answer briefly."}
    session = api.post("/api/sessions/", {"agent": api.agent(spec)["id"]})
    usage = TokenUsage(prompt_tokens=1_204, completion_tokens=88, cached_prompt_tokens=1_000)
    model_server.reply("From the cache.", usage=usage)
    run = wait_for_run_end(api, send(api, session["id"], "hi")["id"])
    assert run["status"] == "succeeded", run

    open_timeline(page, session["id"])
    chips = page.locator(".chip[title='tokens in / out']")
    expect(chips).to_have_text(["1,204 in (1,000 cached) · 88 out tokens"])
    # 204 * 2.50 + 1000 * 1.25 + 88 * 10 = 2640 per million tokens
    expect(page.locator(".chip[data-cost]")).to_have_attribute("data-cost", "0.0026400000")
    screenshot(page, "timeline-cached-tokens")
    # The waterfall's span says so too, its page store as the spans API gives it.
    open_waterfall(page, session["id"])
    page.locator(".wf-span[data-kind=model]").first.click()
    expect(page.locator("#wf-detail .wf-facts")).to_contain_text(
        "Tokens1,204 in (1,000 cached) · 88 out"
    )
    assert_page_store_matches_the_api(page, api, session["id"])
    page.goto("/models/")
    expect(page.locator("[data-model=cached] [data-testid=price-shown]")).to_have_text(
        "$2.50 in ($1.25 cached) · $10.00 out"
    )


def test_rate_limits_are_set_on_the_model_page_and_a_bad_one_is_refused_in_words(
    page: Page, api: Api, model_server: OpenAIServer
) -> None:
    open_form(page)
    page.select_option("#m-provider", "openai_compatible")
    page.fill("#m-name", "limited")
    page.fill("#m-base-url", local_url(model_server))
    page.fill("#m-model", "test-model")
    page.fill("#m-requests-per-minute", "30")
    page.fill("#m-tokens-per-minute", "0")
    page.click("button[type=submit] >> text=Save")
    error = page.locator("[data-field=tokens_per_minute] .field-error")
    expect(error).to_contain_text("a limit of tokens per minute is at least 1")
    shoot(page, "model-rate-limit-refused")

    page.fill("#m-tokens-per-minute", "12000")
    page.click("button[type=submit] >> text=Save")
    expect(page).to_have_url(re.compile(r"/models/$"))
    saved = next(m for m in api.get("/api/models/")["results"] if m["name"] == "limited")
    assert (saved["requests_per_minute"], saved["tokens_per_minute"]) == (30, 12000)


def test_the_timeline_shows_a_fallback_and_a_cached_answer_in_words(
    page: Page, api: Api, model_server: OpenAIServer
) -> None:
    for name in ("flaky", "steady"):
        body = {"provider": "openai_compatible", "model": f"{name}-model", "name": name}
        api.post("/api/models/", body | {"base_url": local_url(model_server)})
    spec = {
        "name": "sturdy",
        "model": "flaky",
        "fallback_models": ["steady"],
        "cache": {"ttl_s": 600},
        "instruction": "Answer briefly.",
    }
    agent = api.agent(spec)["id"]
    model_server.fail(503, times=4)  # each attempt at flaky, then steady answers
    model_server.reply("<b>Steady</b> answer.", usage=TokenUsage(10, 5))

    first = api.post("/api/sessions/", {"agent": agent})
    assert wait_for_run_end(api, send(api, first["id"], "hi")["id"])["status"] == "succeeded"
    second = api.post("/api/sessions/", {"agent": agent})
    assert wait_for_run_end(api, send(api, second["id"], "hi")["id"])["status"] == "succeeded"

    open_timeline(page, first["id"])
    expect(page.locator(".ev.model_fallback")).to_contain_text("flaky failed (model_server_error")
    expect(page.locator(".ev.model_fallback")).to_contain_text("the call moves to steady")
    expect(page.locator(".ev.agent_message .chip.model")).to_have_text("model: steady")
    screenshot(page, "timeline-fallback")
    open_timeline(page, second["id"])
    expect(page.locator(".ev.agent_message .chip.cached")).to_have_text("cached")
    expect(page.locator(".ev.agent_message .text")).to_contain_text("<b>Steady</b> answer.")
    screenshot(page, "timeline-cached-answer")
