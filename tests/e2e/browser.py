"""Browser fixtures: Debian's headless Chromium, driven by Playwright, against a real Daphne.

Test modules take these with ``from tests.e2e.browser import *``. Each module gets its
own browser and its own server on a copy of the seeded data (the demo account and its
agents); each test a fresh browser context signed in as ``demo``. A page that throws, or that the
Content-Security-Policy had to block anything on, fails its test.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Page,
    expect,
    sync_playwright,
)

from tests.support.daphne_server import ROOT, DaphneServer, daphne_server

__all__ = ["api", "browser", "context", "page", "pages_server", "signed_in"]

HEADLESS_SHELL = "/usr/bin/chromium-headless-shell"
CHROMIUM = os.environ.get("STUDIO_CHROMIUM") or (
    HEADLESS_SHELL if os.path.exists(HEADLESS_SHELL) else "/usr/bin/chromium"
)
"""Debian's ``chromium-headless-shell`` when it is installed (CI installs it), else its
``chromium``; ``STUDIO_CHROMIUM`` names another. The shell is Chromium's headless mode
of old, the same release's Blink and V8 without the full browser around them, and what
Playwright itself launches for headless tests. It runs the same pages at about two
thirds of the CPU: tests/e2e on three workers, 2026-12-08, 172 tests passing either way,
803 s of the machine's CPU (419 s wall) against 1,281 s (652 s) with ``chromium``.
The benchmarks keep ``chromium``, the browser people use (``bench/pages.py``)."""
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "var" / "screenshots"
SAVE_SCREENSHOTS = os.environ.get("STUDIO_SCREENSHOTS", "1") != "0"
"""Screenshots are for a person to look at; ``STUDIO_SCREENSHOTS=0`` (CI, whose clone
nobody opens) skips taking them. No check reads them."""
VIEWPORT = {"width": 1366, "height": 800}  # a laptop screen
TIMEOUT_MS = 15_000
DEMO = ("demo", "demo")
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    # Per module: each test module imports these fixtures, which makes each its own
    # fixture, and two Playwright instances may not run at once.
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def pages_server(
    tmp_path_factory: pytest.TempPathFactory, seeded_data: Path
) -> Iterator[DaphneServer]:
    """One server per test module, on its own copy of the seeded data."""
    data = tmp_path_factory.mktemp("studio") / "data"
    with daphne_server(data, template=seeded_data) as server:
        yield server


@pytest.fixture(scope="module")
def signed_in(browser: Browser, pages_server: DaphneServer) -> dict[str, Any]:
    """The storage state (session cookie) of ``demo``, signed in once through the form."""
    context = browser.new_context(base_url=pages_server.url)
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", DEMO[0])
    page.fill("#id_password", DEMO[1])
    page.click("button[type=submit] >> text=Sign in")
    page.wait_for_url(f"{pages_server.url}/")
    state = context.storage_state()
    context.close()
    return dict(state)


@dataclass
class PageProblems:
    errors: list[str]

    def on_console(self, message: ConsoleMessage) -> None:
        blocked = re.search(r"Content.Security.Policy|Refused to", message.text)
        if message.type == "error" and blocked:
            self.errors.append(f"CSP: {message.text}")

    def on_page_error(self, error: Exception) -> None:
        self.errors.append(f"script error: {error}")


@pytest.fixture
def context(
    browser: Browser, pages_server: DaphneServer, signed_in: dict[str, Any]
) -> Iterator[BrowserContext]:
    ctx = browser.new_context(
        base_url=pages_server.url,
        storage_state=signed_in,  # type: ignore[arg-type]
        viewport=VIEWPORT,  # type: ignore[arg-type]
    )
    ctx.set_default_timeout(TIMEOUT_MS)
    problems = PageProblems([])
    ctx.on("page", lambda p: watch(p, problems))
    yield ctx
    ctx.close()
    assert problems.errors == []


def signed_in_as(browser: Browser, server: DaphneServer, user: tuple[str, str]) -> BrowserContext:
    """A new browser context on ``server``, signed in as ``user`` through the form."""
    context = browser.new_context(base_url=server.url, viewport=VIEWPORT)  # type: ignore[arg-type]
    page = context.new_page()
    page.goto("/accounts/login/")
    page.fill("#id_username", user[0])
    page.fill("#id_password", user[1])
    page.click("button[type=submit] >> text=Sign in")
    page.wait_for_url(f"{server.url}/")
    page.close()
    return context


def watch(page: Page, problems: PageProblems) -> None:
    page.on("console", problems.on_console)
    page.on("pageerror", problems.on_page_error)


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def screenshot(page: Page, name: str, *, full_page: bool = False) -> Path:
    """Save what the page shows as ``var/screenshots/<name>.png`` (the README's folder),
    unless ``STUDIO_SCREENSHOTS=0``."""
    path = SCREENSHOTS / f"{name}.png"
    if SAVE_SCREENSHOTS:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=full_page)
    return path


class Api:
    """Studio's REST API as ``demo`` (or ``user``), with a token: for arranging data and
    reading the database's truth back."""

    def __init__(self, base_url: str, user: tuple[str, str] = DEMO) -> None:
        self.base_url = base_url
        body = self._call("POST", "/api/auth/token/", {"username": user[0], "password": user[1]})
        self.token = body["token"]

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if getattr(self, "token", None):
            headers["Authorization"] = f"Token {self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise AssertionError(f"{method} {path}: {error.code} {error.read()!r}") from None
        return json.loads(raw) if raw else None

    def upload(self, path: str, field: str, filename: str, content: bytes) -> Any:
        """POST one file as a multipart body."""
        boundary = "studio-test-boundary"
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; '
            f'filename="{filename}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        )
        data = head.encode() + content + f"\r\n--{boundary}--\r\n".encode()
        headers = {
            "Accept": "application/json",
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "Authorization": f"Token {self.token}",
        }
        request = urllib.request.Request(
            self.base_url + path, data=data, method="POST", headers=headers
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def get(self, path: str) -> Any:
        return self._call("GET", path)

    def post(self, path: str, body: Any = None) -> Any:
        return self._call("POST", path, body if body is not None else {})

    def patch(self, path: str, body: Any) -> Any:
        return self._call("PATCH", path, body)

    def model(self, name: str, **options: Any) -> dict[str, Any]:
        """A scripted model config (``options``: script, loop, token_delay_s)."""
        return self.post("/api/models/", {"name": name, "provider": "scripted", "options": options})  # type: ignore[no-any-return]

    def agent(self, spec: dict[str, Any], description: str = "") -> dict[str, Any]:
        body = {"name": spec["name"], "description": description, "spec": spec}
        return self.post("/api/agents/", body)  # type: ignore[no-any-return]

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """Every stored event of the session, in seq order."""
        found: list[dict[str, Any]] = []
        after = 0
        while True:
            page = self.get(f"/api/sessions/{session_id}/events/?after={after}&limit=500")
            found += page["results"]
            if not page["next"]:
                return found
            after = page["last_seq"]


@pytest.fixture(scope="module")
def api(pages_server: DaphneServer) -> Api:
    return Api(pages_server.url)


def timeline_rows(page: Page) -> list[tuple[int, str]]:
    """The stored events the timeline shows, as (seq, type) in seq order; an event shown
    twice fails here."""
    found = page.eval_on_selector_all(
        "#timeline [data-seq]", "els => els.map(e => [Number(e.dataset.seq), e.dataset.type])"
    )
    rows = [(int(seq), str(kind)) for seq, kind in found]
    assert len(rows) == len({seq for seq, _ in rows}), f"an event is shown twice: {rows}"
    return sorted(rows)


def until[T](check: Callable[[], T], what: str, within: float = 30.0) -> T:
    """``check()``'s first truthy value, polled every 50 ms; fails after ``within`` s."""
    deadline = time.monotonic() + within
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} within {within}s")
        time.sleep(0.05)
    return value
