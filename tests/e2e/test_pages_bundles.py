"""Run bundles in Chromium on a real Daphne: demo exports a run (with markup in its
title, message, tool arguments and answer) from the session page's **Export bundle**;
another user imports it from the sessions list's **Import bundle…**; the imported
session's timeline and waterfall draw the same rows and spans as the original's, all
markup as text, and a refused bundle says why."""

from __future__ import annotations

import io
import json
import time
import zipfile
from typing import Any

from playwright.sync_api import Browser, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import (
    VIEWPORT,
    Api,
    PageProblems,
    screenshot,
    signed_in_as,
    timeline_rows,
    watch,
)
from tests.support.daphne_server import DaphneServer

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
XSS = "<script>window.__pwned=1</script><img src=x onerror=window.__pwned=2>"
TITLE = f"Sums {XSS}"
SCRIPT = [
    {"text": "", "tool_calls": [{"name": "calculator", "args": {"expression": f"2 + 3 {XSS}"}}]},
    {"text": "", "tool_calls": [{"name": "calculator", "args": {"expression": "2 + 3"}}]},
    {"text": f"The answer is {{last_tool_result}}. {XSS}"},
]
ODD_NAME = "<img src=x onerror=window.__pwned=3>"
BOB = ("bob_bundles", "bob-bundles-password-1")
MAKE_BOB = (
    "from django.contrib.auth.models import User; "
    f"User.objects.create_user({BOB[0]!r}, password={BOB[1]!r})"
)


def demo_run(api: Api) -> dict[str, Any]:
    api.model("bundles_model", script=SCRIPT, loop=False)
    tools = [{"name": "calculator"}]
    spec = {"name": "bundler", "model": "bundles_model", "instruction": "Sum.", "tools": tools}
    agent = api.agent(spec)
    session = api.post("/api/sessions/", {"agent": agent["id"], "title": TITLE})
    run = api.post(f"/api/sessions/{session['id']}/messages/", {"text": f"2 + 3? {XSS}"})
    deadline = time.monotonic() + 30
    while (run := api.get(f"/api/runs/{run['id']}/"))["status"] not in ENDED:
        assert time.monotonic() < deadline, run
        time.sleep(0.1)
    assert run["status"] == "succeeded", run
    return run


def not_pwned(page: Page) -> None:
    assert page.evaluate("() => window.__pwned") is None


def drawn(page: Page, path: str, ready: str) -> None:
    page.goto(path)
    expect(page.locator("body")).to_have_attribute("data-ready", ready)


def span_rows(page: Page) -> list[tuple[str, str]]:
    found = page.eval_on_selector_all(
        ".wf-span", "els => els.map(e => [e.dataset.kind || '', e.dataset.name || ''])"
    )
    return [(str(kind), str(name)) for kind, name in found]


def import_from_the_list(page: Page, name: str, data: bytes, mime: str) -> None:
    page.goto("/sessions/")
    page.get_by_test_id("bundle-import").locator("summary").click()
    page.set_input_files("#bundle-file", files=[{"name": name, "mimeType": mime, "buffer": data}])
    page.get_by_test_id("bundle-submit").click()


def test_export_then_import_as_another_user_draws_the_same_run(
    page: Page, api: Api, browser: Browser, pages_server: DaphneServer
) -> None:
    run = demo_run(api)
    drawn(page, f"/sessions/{run['session']}/", "timeline")
    original_rows = timeline_rows(page)
    expect(page.locator("h1")).to_have_text(TITLE)
    with page.expect_download() as download:
        page.get_by_test_id("export-bundle").click()
    assert download.value.suggested_filename.endswith(".studio-run.zip")
    bundle = open(download.value.path(), "rb").read()  # noqa: SIM115
    drawn(page, f"/sessions/{run['session']}/waterfall/", "waterfall")
    original_spans = span_rows(page)
    assert ("tool", "calculator") in original_spans

    pages_server.manage("shell", "-c", MAKE_BOB)
    bob = signed_in_as(browser, pages_server, BOB)
    problems = PageProblems([])
    bob.on("page", lambda p: watch(p, problems))
    mine = bob.new_page()
    import_from_the_list(mine, "run.studio-run.zip", bundle, "application/zip")
    mine.wait_for_url(lambda url: "/sessions/" in url and run["session"] not in url)
    expect(mine.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(mine.locator("h1")).to_have_text(TITLE)
    expect(mine.get_by_test_id("imported")).to_have_text("imported · read-only")
    expect(mine.locator("#timeline")).to_contain_text(f"The answer is 5. {XSS}")
    expect(mine.locator("#timeline")).to_contain_text(XSS)
    assert timeline_rows(mine) == original_rows
    expect(mine.locator("button.fork-here")).to_have_count(0)  # read-only: no fork
    not_pwned(mine)
    screenshot(mine, "bundle-imported-timeline-1280")
    mine.set_viewport_size({"width": 390, "height": 844})
    screenshot(mine, "bundle-imported-timeline-390", full_page=True)
    mine.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]

    mine.locator("#to-waterfall").click()
    expect(mine.locator("body")).to_have_attribute("data-ready", "waterfall")
    assert span_rows(mine) == original_spans
    not_pwned(mine)
    screenshot(mine, "bundle-imported-waterfall-1280")
    mine.set_viewport_size({"width": 390, "height": 844})
    screenshot(mine, "bundle-imported-waterfall-390", full_page=True)
    mine.set_viewport_size(VIEWPORT)  # type: ignore[arg-type]

    # Replayed from its page on the recorded outputs: the same rows, no divergence.
    mine.go_back()
    expect(mine.locator("body")).to_have_attribute("data-ready", "timeline")
    imported_url = mine.url
    controls = mine.locator("#replay-controls")
    expect(controls).to_be_visible()
    controls.get_by_role("button", name="Replay").click()
    mine.wait_for_url(lambda url: url != imported_url and "/sessions/" in url)
    expect(mine.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(mine.locator("#session-status")).to_have_text("succeeded")
    expect(mine.locator(".ev.replay-diverged")).to_have_count(0)
    assert timeline_rows(mine) == original_rows
    not_pwned(mine)

    # Markup in the agent's name (not a valid name: made one) and a refused version.
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        document = json.loads(archive.read("bundle.json"))
    document["agent"]["name"] = ODD_NAME
    import_from_the_list(mine, "odd.json", json.dumps(document).encode(), "application/json")
    expect(mine.locator("body")).to_have_attribute("data-ready", "timeline")
    mine.goto("/agents/")
    expect(mine.locator("body")).to_contain_text(f"Imported from a run bundle: {ODD_NAME} v1.")
    not_pwned(mine)
    document["version"] = 3
    import_from_the_list(mine, "v3.json", json.dumps(document).encode(), "application/json")
    expect(mine.locator(".messages .alert.error")).to_contain_text(
        "Import refused: bundle version 3 is not supported here (this Studio reads 1, 2) "
        "(at version)"
    )
    mine.get_by_test_id("bundle-import").locator("summary").click()
    screenshot(mine, "bundle-import-refused-1280")
    mine.set_viewport_size({"width": 390, "height": 844})
    screenshot(mine, "bundle-import-refused-390")
    bob.close()
    assert problems.errors == []


def test_the_session_page_offers_the_bundle_and_another_user_gets_404(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    agents = api.get("/api/agents/?page_size=100")["results"]
    calculator = next(a for a in agents if a["name"] == "calculator")
    session = api.post("/api/sessions/", {"agent": calculator["id"]})
    response = page.request.get(f"/api/sessions/{session['id']}/bundle/")
    assert response.status == 200 and response.json()["format"] == "studio-run-bundle"
    other = pages_server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from studio.models import Session; "
        "eve = User.objects.create_user('eve_bundles'); "
        "print(Session.objects.create(owner=eve, title='eve').pk)",
    )
    eves = other.stdout.strip().splitlines()[-1]
    assert page.request.get(f"/api/sessions/{eves}/bundle/").status == 404
    assert page.request.get(f"/api/sessions/{eves}/bundle/?zip=1").status == 404
