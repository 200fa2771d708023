"""Issue 26's round trip, between two Studios: a real run (the real langchain-openai
client against the in-repo OpenAI-compatible server, an image attached, a tool call)
in one Studio, exported over the API and with ``manage.py export_bundle``; imported
into a second Studio on a freshly migrated database, served by its own Daphne, over
the HTTP API and with ``manage.py import_bundle``. There the timeline (every event's
wire JSON, seq by seq) and the waterfall (the run's spans) are the original's, the
image is the importer's to see, and a replay reproduces the run on its recorded
outputs without a model call. Then Chromium draws the imported session with its
image, the file's name (markup) as text; screenshots at three widths, light and dark."""

from __future__ import annotations

import hashlib
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from agents_core import events as core_events
from agents_core.replay import by_branch, comparable, is_divergence
from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, PageProblems, screenshot, signed_in_as, until, watch
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.images import png
from tests.support.openai_server import OpenAIServer, ToolCallReply

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
XSS = "<img src=x onerror=window.__pwned=1>"
IMAGE = png(48, 32, (30, 90, 210))
IMAGE_NAME = f"{XSS}.png"
ANSWER = "A blue rectangle; and 2 + 3 = 5."
CAROL = ("carol_imports", "carol-imports-password-1")
DAVE = ("dave_imports", "dave-imports-password-1")
MAKE_USER = (
    "from django.contrib.auth.models import User; User.objects.create_user({!r}, password={!r})"
)
MAKE_CAROL = MAKE_USER.format(*CAROL)
MAKE_DAVE = MAKE_USER.format(*DAVE)


@pytest.fixture(scope="module")
def fresh_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaphneServer]:
    """A second Studio: a new data directory (SQLite file, media), migrated from
    nothing, with one user and nothing else."""
    data = tmp_path_factory.mktemp("fresh") / "data"
    with daphne_server(data) as server:
        server.manage("shell", "-c", MAKE_CAROL)
        yield server


def raw(api: Api, path: str) -> bytes:
    request = urllib.request.Request(
        api.base_url + path, headers={"Authorization": f"Token {api.token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body: bytes = response.read()
    return body


def send_with_image(api: Api, session_id: str, text: str) -> dict[str, Any]:
    """A message with ``IMAGE`` attached, as the playground sends it (multipart)."""
    boundary = f"b-{uuid.uuid4().hex}"
    head = f"--{boundary}\r\nContent-Disposition: form-data; name="
    body = (
        (
            f'{head}"text"\r\n\r\n{text}\r\n'
            f'{head}"files"; filename="{IMAGE_NAME}"\r\nContent-Type: image/png\r\n\r\n'
        ).encode()
        + IMAGE
        + f"\r\n--{boundary}--\r\n".encode()
    )
    request = urllib.request.Request(
        f"{api.base_url}/api/sessions/{session_id}/messages/",
        data=body,
        method="POST",
        headers={
            "Authorization": f"Token {api.token}",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Accept": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def ended(api: Api, run_id: str) -> dict[str, Any]:
    until(lambda: api.get(f"/api/runs/{run_id}/")["status"] in ENDED, f"run {run_id} ended")
    return dict(api.get(f"/api/runs/{run_id}/"))


def original_run(api: Api, model: OpenAIServer) -> dict[str, Any]:
    """Demo's run: the model sees the image, calls the calculator, answers."""
    api.post(
        "/api/models/",
        {
            "name": "eyes",
            "provider": "openai_compatible",
            "model": "test-model",
            "base_url": model.base_url,
            "options": {"vision": True},
        },
    )
    spec = {
        "name": "looker",
        "model": "eyes",
        "instruction": "Say what you see, and add.",
        "tools": [{"name": "calculator"}],
    }
    agent = api.agent(spec)
    session = api.post("/api/sessions/", {"agent": agent["id"], "title": f"Blue {XSS}"})
    model.reply(tool_calls=[ToolCallReply("calculator", {"expression": "2 + 3"})])
    model.reply(ANSWER)
    run = send_with_image(api, session["id"], f"What is this, and 2 + 3? {XSS}")
    finished = ended(api, run["id"])
    assert finished["status"] == "succeeded", finished
    assert len(model.chat_requests) == 2
    return finished


def wire(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "session_id"} for e in events]


def same_run(original: dict[str, Any], copy: dict[str, Any]) -> None:
    keep = ("status", "input_tokens", "output_tokens", "started_at", "ended_at", "error_code")
    assert {k: copy.get(k) for k in keep} == {k: original.get(k) for k in keep}


def replayed(api: Api, run_id: str, recorded: list[dict[str, Any]], invocation: str) -> str:
    """Replay imported run ``run_id``: it succeeds, never diverges, and its turn is the
    recorded one. The replay's session id."""
    started = api.post(f"/api/runs/{run_id}/replay/")
    replay = ended(api, started["id"])
    assert replay["status"] == "succeeded", replay
    events = [core_events.Event.model_validate(e) for e in api.events(replay["session"])]
    turn = [e for e in events if e.invocation_id == replay["invocation_id"]]
    assert not any(is_divergence(e) for e in turn)
    original = [core_events.Event.model_validate(e) for e in recorded]
    recorded_turn = [e for e in original if e.invocation_id == invocation]
    assert by_branch(comparable(turn)) == by_branch(comparable(recorded_turn))
    assert any(e.text == ANSWER for e in turn)
    return str(replay["session"])


def test_a_run_exported_from_one_studio_replays_in_a_fresh_one(
    api: Api,
    pages_server: DaphneServer,
    fresh_server: DaphneServer,
    browser: Browser,
    tmp_path: Path,
) -> None:
    with OpenAIServer() as model:
        run = original_run(api, model)
        session_id = run["session"]
        timeline = api.events(session_id)
        waterfall = api.get(f"/api/runs/{run['id']}/spans/")
        assert {s["kind"] for s in waterfall["spans"]} >= {"agent", "model", "tool"}
        zipped = raw(api, f"/api/sessions/{session_id}/bundle/?zip=1")
        shell_file = tmp_path / "from-the-shell.studio-run.json"
        pages_server.manage("export_bundle", session_id, "--output", str(shell_file))
        by_api = json.loads(raw(api, f"/api/sessions/{session_id}/bundle/"))
        by_shell = json.loads(shell_file.read_bytes())
        assert {**by_shell, "exported_at": None} == {**by_api, "exported_at": None}
        [carried] = by_api["files"]
        assert carried["sha256"] == hashlib.sha256(IMAGE).hexdigest()

        carol = Api(fresh_server.url, CAROL)
        imported = carol.upload("/api/bundles/import/", "file", "run.studio-run.zip", zipped)
        by_command = fresh_server.manage("import_bundle", str(shell_file), "--user", CAROL[0])
        copies = [imported["id"], by_command.stdout.strip().splitlines()[-1]]
        copied_runs = []
        for copy_id in copies:
            assert wire(carol.events(copy_id)) == wire(timeline)
            [copied_run] = carol.get(f"/api/runs/?session={copy_id}")["results"]
            copied = carol.get(f"/api/runs/{copied_run['id']}/spans/")
            assert copied["spans"] == waterfall["spans"]
            same_run(run, copied["run"])
            copied_runs.append(copied_run["id"])
        requests_before = len(model.chat_requests)
        replay_session = replayed(carol, copied_runs[0], timeline, run["invocation_id"])
        assert len(model.chat_requests) == requests_before  # played back, never asked

    refused = fresh_server.manage("import_bundle", str(shell_file), "--user", "nobody", check=False)
    assert refused.returncode != 0 and "no user 'nobody'" in refused.stderr
    looked_at(browser, fresh_server, imported["id"], replay_session)
    older = tmp_path / "v1.json"  # the same run as a version 1 bundle: no bytes
    older.write_text(json.dumps({k: v for k, v in by_api.items() if k != "files"} | {"version": 1}))
    fresh_server.manage("shell", "-c", MAKE_DAVE)
    dave_copy = fresh_server.manage("import_bundle", str(older), "--user", DAVE[0])
    with signed_in_as(browser, fresh_server, DAVE) as context:
        page = context.new_page()
        page.goto(f"/sessions/{dave_copy.stdout.strip().splitlines()[-1]}/")
        missing = page.locator(".ev.user_message figure.attachment .attachment-missing")
        expect(missing).to_have_text("Not stored in this Studio")
        expect(page.locator(".ev.user_message figcaption")).to_contain_text(IMAGE_NAME)
        page.evaluate("() => window.scrollTo(0, 0)")
        screenshot(page, "bundles/bundle-v1-attachment-missing-1280")


def looked_at(browser: Browser, server: DaphneServer, session_id: str, replay: str) -> None:
    """Carol's browser draws the imported session: its image loads (her upload now),
    its name is text; the replay's timeline shows the image too. A version 1 bundle of
    the same run (no bytes) says the file is not here instead of a broken picture."""
    context = signed_in_as(browser, server, CAROL)
    problems = PageProblems([])
    context.on("page", lambda p: watch(p, problems))
    page = context.new_page()
    blob = hashlib.sha256(IMAGE).hexdigest()
    served = page.request.get(f"/files/{blob}/")
    assert served.status == 200 and served.body() == IMAGE
    for path, name in (
        (f"/sessions/{session_id}/", "imported"),
        (f"/sessions/{replay}/", "replay"),
    ):
        shows_the_image(page, path)
        if name == "imported":
            expect(page.get_by_test_id("imported")).to_have_text("imported · read-only")
            shots(page, "bundle-imported-attachment")
    context.close()
    assert problems.errors == []


def shows_the_image(page: Page, path: str) -> None:
    page.goto(path)
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    figure = page.locator(".ev.user_message figure.attachment")
    expect(figure.locator("figcaption")).to_contain_text(IMAGE_NAME)
    page.wait_for_function(
        "() => { const img = document.querySelector('.ev.user_message .attachment img');"
        " return !!img && img.complete && img.naturalWidth === 48; }"
    )
    expect(page.locator(".ev.agent_message .text").last).to_contain_text(ANSWER)
    assert page.evaluate("() => window.__pwned") is None


def shots(page: Page, name: str) -> None:
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)  # type: ignore[arg-type]
        for width in (390, 820, 1280):
            page.set_viewport_size({"width": width, "height": 900})
            page.evaluate("() => window.scrollTo(0, 0)")  # the sticky header stays on top
            screenshot(page, f"bundles/{name}-{width}-{scheme}", full_page=True)
    page.emulate_media(color_scheme="light")
