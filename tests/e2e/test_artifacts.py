"""Artifacts in the browser: a run's tool saves a report (twice) and an HTML page, the
timeline says what was saved, the session page's Artifacts panel appears live with the
report previewed as text and an image previewed as an image, and the download link
hands over the newest version's bytes. Markup in names and texts stays text; an HTML
artifact downloads as plain text, never rendered."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot

WIDE = {"width": 1280, "height": 900}
REPORT = "# Report <b>v2</b>\n<script>window.pwned = 1</script>\nTea: 3 cups."
PAGE = '<h1>hi</h1><img src=x onerror="window.pwned = 2">'


def _save(name: str, content: str, content_type: str) -> dict[str, object]:
    args = {"name": name, "content": content, "content_type": content_type}
    return {"tool_calls": [{"name": "save_artifact", "args": args}]}


def _png(width: int = 24, height: int = 16) -> bytes:
    """A real, small PNG: a teal rectangle."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x10\x90\x90" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def test_a_tools_artifacts_are_previewed_and_downloaded_on_the_session_page(
    page: Page, api: Api, tmp_path: Path
) -> None:
    script = [
        _save("report.md", "# Report v1", "text/markdown"),
        _save("report.md", REPORT, "text/markdown"),
        _save("<b>page.html", PAGE, "text/html"),
        {"text": "Saved the report."},
    ]
    api.model("archivist-model", script=script)
    spec = {
        "name": "archivist",
        "model": "archivist-model",
        "instruction": "Save reports.",
        "tools": [{"name": "artifacts"}],
    }
    agent = api.agent(spec)
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    page.set_viewport_size(WIDE)  # type: ignore[arg-type]
    page.goto(f"/sessions/{session['id']}/")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#artifacts-empty")).to_be_visible()

    api.post(f"/api/sessions/{session['id']}/messages/", {"text": "Write the report"})
    saved = page.locator(".chip.artifact")
    expect(saved).to_have_text(
        ["saved report.md v1", "saved report.md v2", "saved <b>page.html v1"]
    )
    panel = page.get_by_test_id("artifacts")
    report = panel.locator('[data-artifact="report.md"]')
    expect(report).to_have_attribute("data-version", "2")  # swapped in live, no reload
    expect(report.locator(".artifact-text")).to_have_text(REPORT)
    expect(report.locator("summary")).to_have_text("2 versions")
    html = panel.locator('[data-artifact="<b>page.html"]')
    expect(html.locator(".name")).to_have_text("<b>page.html")
    expect(html.locator(".artifact-text")).to_have_text(PAGE)
    expect(panel.locator("b, i, h1, script, img")).to_have_count(0)  # markup stays text
    assert page.evaluate("window.pwned") is None

    # An image saved through the API is previewed as an image.
    uploaded = page.request.post(
        f"/api/sessions/{session['id']}/artifacts/",
        headers={"Authorization": f"Token {api.token}"},
        multipart={
            "name": "chart.png",
            "file": {"name": "chart.png", "mimeType": "image/png", "buffer": _png()},
        },
    )
    assert uploaded.status == 201, uploaded.text()
    page.reload()
    image = panel.locator('[data-artifact="chart.png"] img.artifact-image')
    expect(image).to_be_visible()
    page.wait_for_function(
        "img => img.complete && img.naturalWidth === 24", arg=image.element_handle()
    )
    panel.scroll_into_view_if_needed()
    screenshot(page, "artifacts-panel")

    with page.expect_download() as downloading:
        report.get_by_test_id("artifact-download").click()
    download = downloading.value
    assert download.suggested_filename == "report.md"
    target = tmp_path / "report.md"
    download.save_as(target)
    assert target.read_text(encoding="utf-8") == REPORT

    served = page.request.get(
        f"/api/sessions/{session['id']}/artifacts/<b>page.html/download/?inline=1"
    )
    assert served.headers["content-type"] == "text/plain; charset=utf-8"
    assert served.headers["content-disposition"].startswith("attachment;")
    assert served.headers["x-content-type-options"] == "nosniff"
    assert served.headers["content-security-policy"].startswith("sandbox;")
    assert served.text() == PAGE


def test_the_builder_offers_the_artifact_tools(page: Page) -> None:
    page.goto("/agents/new/")
    expect(page.locator("body")).to_have_attribute("data-ready", "builder")
    toggle = page.locator("input[id$='-artifacts']")
    expect(toggle).to_have_count(1)
    expect(page.locator("li", has=toggle)).to_contain_text("Save, load and list files")
