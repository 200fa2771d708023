"""Skills in the browser: a folder uploaded on the skills page (its markup shown as text,
a hostile zip refused with a reason), attached to an agent in the builder, and loaded
by the agent in a run, where the timeline shows the load_skill call and its result."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

WIDE = {"width": 1280, "height": 900}
SKILL_MD = (
    "---\nname: tea-brewing\ndescription: Brew <b>tea</b> well; use for any tea question.\n"
    "---\n# Brewing\nSteep <i>green</i> tea 2 minutes at 80 C. See steps.md.\n"
)


def _traversal_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("SKILL.md", SKILL_MD.replace("tea-brewing", "evil-skill"))
        archive.writestr("../outside.md", "escaped")
    return buffer.getvalue()


def test_a_skill_uploaded_and_attached_is_loaded_in_a_run(
    page: Page, api: Api, tmp_path: Path
) -> None:
    folder = tmp_path / "tea"
    (folder / "ref").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL_MD)
    (folder / "ref" / "steps.md").write_text("1. Boil <script>water</script>.")
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]

    page.goto("/skills/")
    page.get_by_test_id("skill-folder").set_input_files(folder)
    page.get_by_role("button", name="Upload folder").click()
    expect(page.get_by_test_id("skill-version")).to_have_text("v1")
    body = page.get_by_test_id("skill-body")
    expect(body).to_contain_text("Steep <i>green</i> tea")  # markup shown as text
    expect(page.locator("main i, main b, main script")).to_have_count(0)
    expect(page.get_by_test_id("skill-file").locator("summary")).to_have_text(
        "ref/steps.md 31 bytes"
    )
    screenshot(page, "skill-detail")

    page.goto("/skills/")
    page.get_by_test_id("skill-archive").set_input_files(
        files=[{"name": "evil.zip", "mimeType": "application/zip", "buffer": _traversal_zip()}]
    )
    page.get_by_role("button", name="Upload zip").click()
    expect(page.locator(".alert.error")).to_contain_text("Upload refused: '../outside.md'")
    expect(page.locator("[data-testid=skill-table] tbody tr")).to_have_count(1)
    screenshot(page, "skills-refused")

    load = {"tool_calls": [{"name": "load_skill", "args": {"name": "tea-brewing"}}]}
    api.model("brewer-model", script=[load, {"text": "Steep it 2 minutes."}])
    spec = {"name": "brewer", "model": "brewer-model", "instruction": "Help with tea."}
    agent = api.agent(spec)
    page.goto(f"/agents/{agent['id']}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    choice = page.locator("[data-skill=tea-brewing]")
    expect(choice).to_contain_text("Brew <b>tea</b> well")
    choice.get_by_role("checkbox").check()
    expect(page.locator("#validity")).to_have_text("Valid")
    choice.scroll_into_view_if_needed()
    screenshot(page, "builder-skills")
    page.click("#save")
    expect(page.locator("#version-badge")).to_have_text("v2")
    saved = api.get(f"/api/agents/{agent['id']}/")["spec"]
    assert saved["skills"] == [{"name": "tea-brewing", "version": 1}]
    expect(choice).to_contain_text("tea-brewing (v1)")

    page.goto(f"/playground/?agent={agent['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.fill("#message", "How do I brew green tea?")
    page.keyboard.press("Enter")
    expect(page.locator(".msg.agent .bubble").last).to_have_text("Steep it 2 minutes.")
    page.locator("#open-timeline").click()
    loaded = page.locator(".tool[data-tool=load_skill]")
    expect(loaded).to_contain_text("Steep <i>green</i> tea 2 minutes")
    expect(loaded).to_contain_text("ref/steps.md")
    expect(page.locator("#timeline i, #timeline b")).to_have_count(0)
    loaded.locator("summary").click()  # open it: the whole result, as text
    expect(loaded.locator("pre").last).to_be_visible()
    screenshot(page, "timeline-load-skill")
