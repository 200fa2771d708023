"""The acceptance path of images in Chromium: an Anthropic model configured on the
models page from the Anthropic preset (its native provider, a thinking budget set in
its own input) against the in-repo server, its connection tested; an image attached
in the playground reaches the model as an image block; the answer, its folded thinking
and the image (served by the owner-only file view, under the page's policy) show in
the playground and the timeline."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403
from tests.e2e.browser import VIEWPORT, Api, screenshot
from tests.e2e.page_checks import bottoms
from tests.support.anthropic_server import AnthropicServer
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.images import png

KEY = "sk-ant-vision-0123456789abcdef"
IMAGE = png(48, 32, (220, 40, 40))


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    data = tmp_path_factory.mktemp("studio") / "data"
    env = {"STUDIO_OUTBOUND_ALLOWLIST": "localhost"}
    with daphne_server(data, env, template=seeded_data) as server:
        yield server


def _configure_model(page: Page, server: AnthropicServer) -> None:
    page.goto("/models/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "models")
    page.select_option("#m-preset", "anthropic")  # Anthropic's own Messages API
    expect(page.locator("#m-provider")).to_have_value("anthropic")
    page.fill("#m-name", "claude-vision")
    page.fill("#m-base-url", server.base_url.replace("127.0.0.1", "localhost"))
    page.fill("#m-model", "claude-test")
    page.fill("#m-key", KEY)
    expect(page.locator("#m-opt-vision")).to_be_checked()
    page.fill("#m-opt-max-tokens", "2048")
    page.fill("#m-opt-thinking-budget", "1024")
    page.click("button[type=submit] >> text=Save")
    expect(page).to_have_url(re.compile(r"/models/$"))
    # The list's script must be ready before its button is clicked (else nothing answers).
    expect(page.locator("body")).to_have_attribute("data-ready", "models")
    server.reply("ok")
    row = page.locator("[data-model=claude-vision]")
    row.locator("text=Test connection").click()
    expect(row.locator("[data-test-result]")).to_have_text(
        re.compile(r"^OK: localhost:"),
        timeout=45_000,  # a real request; CI's machine is busy
    )


def _image_loaded(page: Page, selector: str) -> bool:
    """Whether the first image at ``selector`` loads, its bytes decoded (48 px wide),
    within 10 s: visible comes before loaded."""
    page.wait_for_function(
        "sel => { const img = document.querySelector(sel);"
        " return !!img && img.complete && img.naturalWidth === 48; }",
        arg=selector,
        timeout=10_000,
    )
    return True


def test_an_image_attached_in_the_playground_reaches_the_model_and_shows_in_the_timeline(
    page: Page, api: Api
) -> None:
    with AnthropicServer() as server:
        _configure_model(page, server)
        agent = api.agent(
            {"name": "looker", "model": "claude-vision", "instruction": "Say what you see."}
        )
        server.reply(
            "A red rectangle, wider than it is tall.",
            thinking="The picture is one flat red colour; it is wider than tall.",
        )

        page.goto(f"/playground/?agent={agent['id']}")
        expect(page.locator("body")).to_have_attribute("data-ready", "playground")
        page.set_input_files(
            "#attach", files=[{"name": "red.png", "mimeType": "image/png", "buffer": IMAGE}]
        )
        expect(page.locator("#attached")).to_have_text("red.png")
        for width in (390, VIEWPORT["width"]):  # a phone: the buttons below the message box
            page.set_viewport_size({**VIEWPORT, "width": width})
            ends = bottoms(page, ".composer .attach", "#attached", "#send")
            assert max(ends) - min(ends) <= 1, (width, ends)  # on one line
        page.fill("#message", "What is in this picture?")
        page.click("#send")

        answer = page.locator(".msg.agent[data-seq] .bubble")
        expect(answer).to_have_text("A red rectangle, wider than it is tall.")
        expect(page.locator(".msg.user .attachment img")).to_be_visible()
        assert _image_loaded(page, ".msg.user .attachment img")
        expect(page.locator("#attached")).to_have_text("")
        expect(page.locator("#stop")).to_be_hidden()  # the run has ended
        screenshot(page, "attachments-playground")

        request = server.requests[-1].body
        sent = request["messages"][0]["content"]
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert request["max_tokens"] == 2048
    assert {"type": "text", "text": "What is in this picture?"} in sent
    (image,) = [block for block in sent if block["type"] == "image"]
    assert image["source"]["media_type"] == "image/png"

    page.click("#open-timeline")
    expect(page.locator("#conn")).to_have_text("Live")
    picture = ".ev.user_message .attachment img"
    expect(page.locator(picture)).to_be_visible()
    assert _image_loaded(page, picture)
    expect(page.locator(".ev.user_message figcaption")).to_contain_text("red.png")
    thinking = page.locator(".ev.agent_message details.thinking")
    expect(thinking).to_have_count(1)
    expect(thinking).not_to_have_attribute("open", "")
    thinking.locator("summary").click()
    expect(thinking).to_contain_text("one flat red colour")
    expect(page.locator(".ev.agent_message .text").last).to_contain_text("A red rectangle")
    screenshot(page, "attachments-timeline", full_page=True)
    assert KEY not in page.content()
