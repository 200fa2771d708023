"""Pages: time to first render in Chromium of a 10,000-event timeline and of the session
list with 10,000 sessions. Targets: < 1 s and < 300 ms.

One Daphne (embedded default: SQLite, in-memory layer) on a database filled directly
through the ORM: one user with 10,000 sessions, one of which holds 10,000 events
(copies of a real turn's six). Debian's Chromium, headless, through Playwright.

"First render" is read in the page: an init script watches the DOM from navigation
start for the element that shows the page's content (the timeline row of the newest
event, ``[data-seq=<last seq>]``, which the page's script renders from the newest page
of events that came with the HTML; the session table, which is server-rendered) and stamps
``performance.now()`` (milliseconds since navigation start) in a task after the next
animation frame, that is once the frame showing it has been produced. First render is
that time, or the first contentful paint if later (nothing is on screen before it).
Each page is loaded once to warm the server, then ``--loads`` times; the figure is the
median. Then the same pages are timed again with ``STUDIO_DEBUG=0`` (static files
collected and served from memory by WhiteNoise, as deployed), reported in ``details``.

``--baseline <git ref>`` compares against older code on the same machine at the same
time: that commit's tree (``git archive``) serves a copy of the same data from a second
Daphne, and the two are loaded alternately, so a busy machine slows both alike. Its
figures go in ``details["baseline"]``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import Measurement, emit, log, parser, rounded
from bench.workload import clone_turn, sample_turn
from tests.support.daphne_server import ROOT, DaphneServer, migrate_data

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TARGETS_MS = {"timeline": 1000.0, "session_list": 300.0}
BATCH = 1000
LINKED_FROM = "/agents/"  # a light page every signed-in user has

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
    migrate_data(server)
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


def first_render_ms(
    context: Any, path: str, selector: str, *, via: str | None = None
) -> dict[str, float]:
    """One load of ``path`` in a new tab (or, with ``via``, in a tab showing that page
    first, as when following a link): first render, first contentful paint and the end
    of the HTML response, in ms since navigation start."""
    page = context.new_page()
    try:
        page.add_init_script(RENDER_CLOCK % json.dumps(selector))
        if via is not None:
            page.goto(via, wait_until="load")
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


def load_times(contexts: dict[str, Any], page: Page, loads: int) -> dict[str, dict[str, Any]]:
    """For each server (its browser context): one load to warm it, then ``loads`` timed
    ones in a new tab and as many following a link from another page, the servers
    taking turns; their medians (ms)."""
    cold = {name: first_render_ms(c, page.path, page.selector) for name, c in contexts.items()}
    warm: dict[str, list[dict[str, float]]] = {name: [] for name in contexts}
    linked: dict[str, list[dict[str, float]]] = {name: [] for name in contexts}
    for _ in range(loads):
        for name, context in contexts.items():
            warm[name].append(first_render_ms(context, page.path, page.selector))
            linked[name].append(first_render_ms(context, page.path, page.selector, via=LINKED_FROM))
    return {name: summary(cold[name], warm[name], linked[name]) for name in contexts}


def summary(
    cold: dict[str, float], warm: list[dict[str, float]], linked: list[dict[str, float]]
) -> dict[str, Any]:
    def median(key: str, loads: list[dict[str, float]] = warm) -> float:
        return rounded(statistics.median(t[key] for t in loads))

    return {
        "render_ms": median("render"),
        "first_load_ms": rounded(cold["render"]),
        "html_response_end_ms": median("html"),
        "first_contentful_paint_ms": median("fcp"),
        "content_shown_ms": median("shown"),
        "max_ms": rounded(max(t["render"] for t in warm)),
        # From another Studio page in the same tab: no new tab, and no new renderer
        # process (a new tab's first navigation to a page sent with
        # Cross-Origin-Opener-Policy: same-origin switches processes).
        "linked_render_ms": median("render", linked),
        "linked_html_response_end_ms": median("html", linked),
    }


def measure(
    servers: dict[str, Any], setup: dict[str, Any], pages: list[Page], loads: int
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{server name: {page name: times}}``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        contexts = {}
        for name, server in servers.items():
            context = browser.new_context(
                base_url=server.url, viewport={"width": 1366, "height": 800}
            )
            cookie = {"name": "sessionid", "value": setup["cookie"], "url": server.url}
            context.add_cookies([cookie])  # type: ignore[list-item]
            contexts[name] = context
        by_page = {page.name: load_times(contexts, page, loads) for page in pages}
        browser.close()
    return {name: {page: by_page[page][name] for page in by_page} for name in servers}


def without_debug(server: Any) -> Any:
    """The same data served with ``STUDIO_DEBUG=0`` (the development secrets made
    explicit, static files collected for WhiteNoise to serve from memory), by the same
    code as ``server``."""
    data: Path = server.data_dir
    production = type(server)(
        data,
        env={
            "STUDIO_DEBUG": "0",
            "STUDIO_SECRET_KEY": (data / "secret_key").read_text().strip(),
            "STUDIO_FIELD_ENCRYPTION_KEYS": (data / "field_encryption_key").read_text().strip(),
        },
    )
    production.manage("collectstatic", "--noinput")
    return production


def served(
    servers: dict[str, Any], setup: dict[str, Any], pages: list[Page], loads: int
) -> dict[str, dict[str, dict[str, Any]]]:
    started = []
    try:
        for server in servers.values():
            started.append(server.start())
        return measure(servers, setup, pages, loads)
    finally:
        for server in started:
            server.stop()


def baseline_server(ref: str, tmp: Path, data: Path) -> Any:
    """A server running git ``ref``'s code on a copy of ``data`` (its own static files)."""
    tree = tmp / "baseline"
    tree.mkdir()
    archive = subprocess.run(  # noqa: S603 (a ref the person running the bench gave)
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],  # noqa: S607
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    copy = tmp / "baseline-data"
    shutil.copytree(data, copy)
    # That tree's own DaphneServer: its ROOT (code, manage.py, static files) is the tree.
    module = _load_module("bench_baseline_daphne_server", tree / "tests/support/daphne_server.py")
    return module.DaphneServer(copy)


def _load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while decorating
    spec.loader.exec_module(module)
    return module


def report(
    page: Page,
    debug: dict[str, dict[str, Any]],
    production: dict[str, dict[str, Any]],
    loads: int,
    baseline: str | None,
) -> Measurement:
    target = TARGETS_MS[page.name]
    value = debug["current"]["render_ms"]
    details: dict[str, Any] = {
        **page.shape,
        "loads": loads,
        "server": "Daphne, STUDIO_DEBUG=1 (the embedded default), SQLite",
        **{k: v for k, v in debug["current"].items() if k != "render_ms"},
        "debug_off": production["current"],
    }
    off = production["current"]["render_ms"]
    line = f"pages: {page.name}: {value:.0f} ms; with STUDIO_DEBUG=0 {off:.0f} ms"
    if baseline is not None:
        details["baseline"] = {
            "ref": baseline,
            **debug["baseline"],
            "debug_off": production["baseline"],
        }
        line += (
            f" (baseline {baseline}: {debug['baseline']['render_ms']:.0f} ms;"
            f" with STUDIO_DEBUG=0 {production['baseline']['render_ms']:.0f} ms)"
        )
    log(line)
    return Measurement(
        name=f"pages.{page.name}",
        value=value,
        unit="ms",
        target=f"< {target:,.0f} ms",
        met=value < target,
        details=details,
    )


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--sessions", type=int, default=10_000)
    args.add_argument("--events", type=int, default=10_000)
    args.add_argument("--loads", type=int, default=5)
    args.add_argument(
        "--baseline",
        metavar="REF",
        help="also time git REF's code on a copy of the data, alternating with this tree's",
    )
    args.add_argument("--prepare", action="store_true", help="(internal)")
    ns = args.parse_args()
    if ns.prepare:
        prepare(ns.sessions, ns.events)
        return
    with tempfile.TemporaryDirectory(prefix="studio-bench-pages-") as tmp:
        data = Path(tmp) / "data"
        server, setup = prepared_server(data, ns.sessions, ns.events)
        servers: dict[str, Any] = {"current": server}
        if ns.baseline is not None:
            servers["baseline"] = baseline_server(ns.baseline, Path(tmp), data)
        last = setup["last_seq"]
        pages = [
            Page(
                "timeline",
                f"/sessions/{setup['session']}/",
                f'[data-seq="{last}"]',
                {"events": last, "rendered": "the newest page of events"},
            ),
            Page(
                "session_list",
                "/sessions/",
                '[data-testid="session-table"]',
                {"sessions": ns.sessions, "rendered": "the table's first page (server-side)"},
            ),
        ]
        debug = served(servers, setup, pages, ns.loads)
        production = served(
            {name: without_debug(s) for name, s in servers.items()}, setup, pages, ns.loads
        )
    for page in pages:
        by_server = {name: times[page.name] for name, times in debug.items()}
        production_by_server = {name: times[page.name] for name, times in production.items()}
        emit(report(page, by_server, production_by_server, ns.loads, ns.baseline))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    main()
