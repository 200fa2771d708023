"""Pages: time to first render in Chromium of a 10,000-event timeline and of the session
list with 10,000 sessions. Targets: < 1 s and < 300 ms.

One Daphne (embedded default: SQLite, in-memory layer) on a database filled directly
through the ORM: one user with 10,000 sessions, one of which holds 10,000 events
(copies of a real turn's six). Debian's Chromium, headless, through Playwright.

"First render" is read in the page: an init script watches the DOM from navigation
start for the element that shows the page's content (the timeline row of the newest
event, ``[data-seq=<last seq>]``, which arrives over the websocket with the newest page
of events; the session table, which is server-rendered) and stamps
``performance.now()`` (milliseconds since navigation start) in a task after the next
animation frame, that is once the frame showing it has been produced. First render is
that time, or the first contentful paint if later (nothing is on screen before it).
Each page is loaded once to warm the server, then ``--loads`` times; the figure is the
median. Then the same pages are timed again with ``STUDIO_DEBUG=0`` (static files
collected and served from memory by WhiteNoise, as deployed), reported in ``details``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import Measurement, emit, log, parser, rounded
from bench.workload import clone_turn, sample_turn
from tests.support.daphne_server import ROOT, DaphneServer

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TARGETS_MS = {"timeline": 1000.0, "session_list": 300.0}
BATCH = 1000

RENDER_CLOCK = """
(() => {
  const selector = %s;
  const stamp = () => requestAnimationFrame(() => setTimeout(() => {
    window.__benchRendered = performance.now();
  }));
  const observer = new MutationObserver(() => {
    if (document.querySelector(selector)) { observer.disconnect(); stamp(); }
  });
  observer.observe(document, { childList: true, subtree: true });
})();
"""


def prepare(sessions: int, events: int) -> None:
    """(In a child with the server's environment.) The user, its sessions and the long
    session's events; prints the long session's id, its last seq and a session cookie."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client

    from studio import services
    from studio.models import ModelConfig

    owner = get_user_model().objects.create_user("bench")
    ModelConfig.objects.create(owner=owner, name="zero", provider="scripted")
    spec = {"name": "bench", "model": "zero", "instruction": "Answer."}
    agent = services.create_agent(owner, name="bench", spec=spec)
    long_session = services.start_session(owner, agent, title="10,000 events")
    fill_events(long_session, events)
    add_sessions(owner, agent, sessions - 1)
    client = Client()
    client.force_login(owner)
    cookie = client.cookies["sessionid"].value
    print(json.dumps({"session": str(long_session.pk), "last_seq": events, "cookie": cookie}))


def fill_events(session: Any, count: int) -> None:
    """``count`` stored events ending with a whole turn: the oldest turn is the one cut
    short when ``count`` is not a multiple of six."""
    from studio.models import Event, Session

    template = asyncio.run(sample_turn())
    events: list[Any] = []
    number = 0
    while len(events) < count:
        events.extend(clone_turn(template, number))
        number += 1
    rows = [
        Event.from_core(session, e.model_copy(update={"seq": seq, "session_id": session.key}))
        for seq, e in enumerate(events[len(events) - count :], start=1)
    ]
    Event.objects.bulk_create(rows, batch_size=BATCH)
    Session.objects.filter(pk=session.pk).update(last_seq=count, status="succeeded")


def add_sessions(owner: Any, agent: Any, count: int) -> None:
    from studio.models import Session

    version = agent.current_version
    rows = [
        Session(owner=owner, agent_version=version, title=f"Session {n}", status="succeeded")
        for n in range(count)
    ]
    for row in rows:
        row.key = str(row.id)
    Session.objects.bulk_create(rows, batch_size=BATCH)


def prepared_server(data: Path, sessions: int, events: int) -> tuple[DaphneServer, dict[str, Any]]:
    server = DaphneServer(data)
    data.mkdir(parents=True)
    server.manage("migrate", "--noinput")
    child = [sys.executable, "-m", "bench.pages", "--prepare"]
    done = subprocess.run(  # noqa: S603 (this script, in the server's environment)
        [*child, "--sessions", str(sessions), "--events", str(events)],
        cwd=ROOT,
        env=server.environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    return server, json.loads(done.stdout.strip().splitlines()[-1])


def first_render_ms(context: Any, path: str, selector: str) -> dict[str, float]:
    """One load of ``path`` in a new tab: first render, first contentful paint and the
    end of the HTML response, in ms since navigation start."""
    page = context.new_page()
    try:
        page.add_init_script(RENDER_CLOCK % json.dumps(selector))
        page.goto(path, wait_until="commit")
        page.wait_for_function("() => window.__benchRendered !== undefined", timeout=60_000)
        page.wait_for_function(
            "() => performance.getEntriesByName('first-contentful-paint').length > 0"
        )
        timings: dict[str, float] = page.evaluate(
            """() => ({
              shown: window.__benchRendered,
              fcp: performance.getEntriesByName('first-contentful-paint')[0].startTime,
              html: performance.getEntriesByType('navigation')[0].responseEnd,
            })"""
        )
        # Nothing is on screen before the first contentful paint, whatever the DOM holds.
        return {**timings, "render": max(timings["shown"], timings["fcp"])}
    finally:
        page.close()


@dataclass(slots=True)
class Page:
    name: str
    path: str
    selector: str
    shape: dict[str, Any]


def load_times(context: Any, page: Page, loads: int) -> dict[str, Any]:
    """One load to warm the server, then ``loads`` timed ones: their medians (ms)."""
    cold = first_render_ms(context, page.path, page.selector)
    warm = [first_render_ms(context, page.path, page.selector) for _ in range(loads)]

    def median(key: str) -> float:
        return rounded(statistics.median(t[key] for t in warm))

    return {
        "render_ms": median("render"),
        "first_load_ms": rounded(cold["render"]),
        "html_response_end_ms": median("html"),
        "first_contentful_paint_ms": median("fcp"),
        "content_shown_ms": median("shown"),
        "max_ms": rounded(max(t["render"] for t in warm)),
    }


def measure(
    server: DaphneServer, setup: dict[str, Any], pages: list[Page], loads: int
) -> dict[str, dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=server.url, viewport={"width": 1366, "height": 800})
        cookie = {"name": "sessionid", "value": setup["cookie"], "url": server.url}
        context.add_cookies([cookie])  # type: ignore[list-item]
        times = {page.name: load_times(context, page, loads) for page in pages}
        browser.close()
    return times


def without_debug(data: Path) -> DaphneServer:
    """The same data served with ``STUDIO_DEBUG=0`` (the development secrets made
    explicit, static files collected for WhiteNoise to serve from memory)."""
    server = DaphneServer(
        data,
        env={
            "STUDIO_DEBUG": "0",
            "STUDIO_SECRET_KEY": (data / "secret_key").read_text().strip(),
            "STUDIO_FIELD_ENCRYPTION_KEYS": (data / "field_encryption_key").read_text().strip(),
        },
    )
    server.manage("collectstatic", "--noinput")
    return server


def served(
    server: DaphneServer, setup: dict[str, Any], pages: list[Page], loads: int
) -> dict[str, dict[str, Any]]:
    server.start()
    try:
        return measure(server, setup, pages, loads)
    finally:
        server.stop()


def report(
    page: Page, debug: dict[str, Any], production: dict[str, Any], loads: int
) -> Measurement:
    target = TARGETS_MS[page.name]
    value = debug["render_ms"]
    log(f"pages: {page.name}: {value:.0f} ms; with STUDIO_DEBUG=0 {production['render_ms']:.0f} ms")
    return Measurement(
        name=f"pages.{page.name}",
        value=value,
        unit="ms",
        target=f"< {target:,.0f} ms",
        met=value < target,
        details={
            **page.shape,
            "loads": loads,
            "server": "Daphne, STUDIO_DEBUG=1 (the embedded default), SQLite",
            **{k: v for k, v in debug.items() if k != "render_ms"},
            "debug_off": production,
        },
    )


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--sessions", type=int, default=10_000)
    args.add_argument("--events", type=int, default=10_000)
    args.add_argument("--loads", type=int, default=5)
    args.add_argument("--prepare", action="store_true", help="(internal)")
    ns = args.parse_args()
    if ns.prepare:
        prepare(ns.sessions, ns.events)
        return
    with tempfile.TemporaryDirectory(prefix="studio-bench-pages-") as tmp:
        data = Path(tmp) / "data"
        server, setup = prepared_server(data, ns.sessions, ns.events)
        last = setup["last_seq"]
        pages = [
            Page(
                "timeline",
                f"/sessions/{setup['session']}/",
                f'[data-seq="{last}"]',
                {"events": last, "rendered": "the newest page of events (websocket backlog)"},
            ),
            Page(
                "session_list",
                "/sessions/",
                '[data-testid="session-table"]',
                {"sessions": ns.sessions, "rendered": "the table's first page (server-side)"},
            ),
        ]
        debug = served(server, setup, pages, ns.loads)
        production = served(without_debug(data), setup, pages, ns.loads)
    for page in pages:
        emit(report(page, debug[page.name], production[page.name], ns.loads))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    main()
