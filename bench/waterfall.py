"""The waterfall: how soon a 10,000-event run's waterfall is interactive in Chromium,
how long the page's frames take while a live run streams at least 50 events/s into it,
and how fast the spans API answers for the 10,000-event run. Targets: < 1 s, frames
< 50 ms, < 200 ms.

One Daphne (embedded default: SQLite, in-memory layer, inline runs). The 10,000-event
run is a real run of the runner (one agent calling three tools a step, on a
zero-latency scripted model) played in memory and stored as one run, with its final
spans as ``end_run`` stores them; the live run is executed by the server on a scripted
model that streams each step's two words 10 ms apart and calls the calculator three
times: four stored events a step, some 60-100 events/s (the rate measured is reported,
and whether it reached 50/s).

- Interactive: an init script stamps ``performance.now()`` (ms since navigation start)
  in a task after the frame following the moment the page says it is ready
  (``body[data-ready=waterfall]``: the run's spans read from the API and drawn); then a
  key press (↓, the next span) is timed to the frame that shows it selected. Median of
  ``--loads`` loads, each in a new tab, after one load to warm the server.
- Live frames: in the open waterfall of the live run, the time between consecutive
  animation frames and Chromium's long animation frames (``long-animation-frame``
  entries: frames whose work took over 50 ms) while the run streams. The value is
  the 99th percentile of the frame intervals; the longest is in the details.
- Spans API: ``GET /api/runs/<id>/spans/`` of the 10,000-event run over HTTP with a
  token, the first request and the median of ``--requests`` after it. An ended run's
  final spans are stored as it ends (``RunSpans``, by ``records.end_run``), so every
  request, the first too, reads them as stored JSON rather than deriving them.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.common import Measurement, emit, log, parser, percentile, rounded
from tests.support.daphne_server import ROOT, DaphneServer, migrate_data

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TARGET_INTERACTIVE_MS = 1000.0
TARGET_FRAME_MS = 50.0
TARGET_API_MS = 200.0
TARGET_LIVE_RATE = 50.0
"""Events a second the live run should store for its frames to count."""
CALLS_PER_STEP = 3
LIVE_TOKEN_DELAY_S = 0.01
READY_CLOCK = """
(() => {
  const stamp = () => requestAnimationFrame(() => setTimeout(() => {
    window.__benchReady = performance.now();
  }));
  const observer = new MutationObserver(() => {
    if (document.body?.dataset.ready !== "waterfall") return;
    observer.disconnect();
    stamp();
  });
  observer.observe(document, { attributes: true, childList: true, subtree: true });
})();
"""
FRAME_CLOCK = """
(() => {
  window.__frames = [];
  window.__longFrames = [];
  let last = performance.now();
  const tick = (now) => {
    window.__frames.push(now - last);
    last = now;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__longFrames.push(entry.duration);
  }).observe({ type: "long-animation-frame", buffered: false });
})();
"""
KEY_RESPONSE = """async () => {
  const chart = document.querySelector(".wf-chart");
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done)));
  const down = { key: "ArrowDown", bubbles: true };
  const press = () => chart.dispatchEvent(new KeyboardEvent("keydown", down));
  chart.focus();
  press(); // selects the first span
  await frame();
  const before = chart.getAttribute("aria-activedescendant");
  const started = performance.now();
  press();
  await frame();
  const after = chart.getAttribute("aria-activedescendant");
  const rows = chart.querySelectorAll(".wf-row").length;
  return { ms: performance.now() - started, moved: before !== after, rows };
}"""


def prepare(events: int, live_steps: int) -> None:
    """(In a child with the server's environment.) The user and its token, the stored
    run of ``events`` events, and the agent of the live run; prints their ids."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from studio import services
    from studio.models import ModelConfig

    owner = get_user_model().objects.create_user("bench")
    token = Token.objects.create(user=owner).key
    ModelConfig.objects.create(owner=owner, name="zero", provider="scripted")
    spec = {"name": "bench", "model": "zero", "instruction": "Answer."}
    stored = services.start_session(owner, services.create_agent(owner, name="bench", spec=spec))
    run_id = store_run(stored, events)
    live_agent = live_agent_for(owner, live_steps)
    live = services.start_session(owner, live_agent, title="live")
    print(
        json.dumps({"token": token, "stored": str(stored.pk), "run": run_id, "live": str(live.pk)})
    )


def store_run(session: Any, count: int) -> str:
    """A real run of ``count`` events (about: whole steps), stored as one run."""
    from studio.models import Event, Run, Session
    from studio.traces.reads import keep_final_spans, run_spans
    from studio.traces.timing import wall_time

    played = asyncio.run(play(max(1, (count - 4) // (1 + CALLS_PER_STEP))))
    stored = [
        Event.from_core(session, e.model_copy(update={"seq": seq, "session_id": session.key}))
        for seq, e in enumerate(played, start=1)
    ]
    Event.objects.bulk_create(stored, batch_size=1000)
    Session.objects.filter(pk=session.pk).update(last_seq=len(played), status="succeeded")
    first, last = played[0], played[-1]
    run = Run.objects.create(
        session=session,
        message="go",
        invocation_id=first.invocation_id,
        status="succeeded",
        start_seq=0,
        started_at=first.created_at,
        ended_at=last.created_at,
    )
    Run.objects.filter(pk=run.pk).update(created_at=first.created_at)
    run.refresh_from_db()
    spans = run_spans(run)  # final: the run has ended, as end_run would find it
    run.timing = wall_time(run.created_at, run.started_at, last.created_at, spans)
    run.save(update_fields=["timing"])
    keep_final_spans(run, spans)
    log(f"waterfall: stored a run of {len(played):,} events")
    return str(run.pk)


async def play(steps: int) -> list[Any]:
    """The stored events of one run of ``steps`` steps, each three tool calls."""
    from agents_core import InMemorySessionService, LlmAgent, RunConfig, Runner
    from agents_core.testing import ScriptedModel, ScriptedResponse, ScriptedToolCall
    from bench.workload import lookup_weather

    calls = [ScriptedToolCall(name="lookup_weather", args={"city": "Paris"})] * CALLS_PER_STEP
    script = [ScriptedResponse(text=f"step {i}", tool_calls=calls) for i in range(steps)]
    script.append(ScriptedResponse(text="all done"))
    agent = LlmAgent(
        "bench", model=ScriptedModel(script), tools=[lookup_weather], max_iterations=steps + 1
    )
    limits = RunConfig(
        max_steps=None, max_model_calls=None, max_tool_calls=None, max_wall_time_s=None
    )
    sessions = InMemorySessionService()
    runner = Runner(agent, session_service=sessions, run_config=limits)
    async for _ in runner.astream(user_id="bench", session_id="s", message="go"):
        pass
    session = await sessions.get_session(app_name="agents", user_id="bench", session_id="s")
    assert session is not None
    return list(session.events)


def live_agent_for(owner: Any, steps: int) -> Any:
    """An agent whose run streams two words a step, 10 ms apart, and calls the
    calculator three times: four stored events a step (its message and three results),
    some 60-100 a second. (One call a step, 20 ms apart, stored only 28-35 a second on
    a busy machine: storing is most of a step.)"""
    from studio import services
    from studio.models import ModelConfig

    call = {"name": "calculator", "args": {"expression": "1 + 1"}}
    step = {"text": "thinking on", "tool_calls": [call] * CALLS_PER_STEP}
    script = [step] * steps + [{"text": "done"}]
    options = {"script": script, "loop": False, "token_delay_s": LIVE_TOKEN_DELAY_S}
    ModelConfig.objects.create(owner=owner, name="drip", provider="scripted", options=options)
    calls = steps * CALLS_PER_STEP + 5
    limits = {"max_steps": steps + 5, "max_model_calls": steps + 5, "max_tool_calls": calls}
    spec = {
        "name": "drip",
        "model": "drip",
        "instruction": "Stream.",
        "tools": [{"name": "calculator"}],
        "max_iterations": min(steps + 1, 1000),
        "limits": limits,
    }
    return services.create_agent(owner, name="drip", spec=spec)


def prepared_server(
    data: Path, events: int, live_steps: int
) -> tuple[DaphneServer, dict[str, Any]]:
    server = DaphneServer(data)
    migrate_data(server)
    child = [sys.executable, "-m", "bench.waterfall", "--prepare"]
    done = subprocess.run(  # noqa: S603 (this script, in the server's environment)
        [*child, "--events", str(events), "--live-steps", str(live_steps)],
        cwd=ROOT,
        env=server.environment(),
        capture_output=True,
        text=True,
        check=True,
    )
    return server, json.loads(done.stdout.strip().splitlines()[-1])


def request(server: DaphneServer, token: str, path: str, body: Any = None) -> tuple[float, bytes]:
    """One API request: (ms to the last byte, the body)."""
    data = None if body is None else json.dumps(body).encode()
    headers = {
        "Authorization": f"Token {token}",
        "Accept": "application/json",
        "Content-Type": "application/json",
    }
    req = urllib.request.Request(server.url + path, data=data, headers=headers)  # noqa: S310 (loopback)
    started = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as response:  # noqa: S310
        raw = response.read()
    return (time.perf_counter() - started) * 1000, raw


def spans_api(server: DaphneServer, setup: dict[str, Any], requests: int) -> Measurement:
    path = f"/api/runs/{setup['run']}/spans/"
    first_ms, raw = request(server, setup["token"], path)
    times = [request(server, setup["token"], path)[0] for _ in range(requests)]
    value = rounded(statistics.median(times))
    spans = len(json.loads(raw)["spans"])
    log(f"waterfall: spans API first {first_ms:.0f} ms, then median {value} ms ({spans:,} spans)")
    return Measurement(
        name="waterfall.spans_api",
        value=value,
        unit="ms",
        target=f"< {TARGET_API_MS:,.0f} ms",
        met=value < TARGET_API_MS,
        details={
            "spans": spans,
            "bytes": len(raw),
            "requests": requests,
            "first_ms": rounded(first_ms),
            "max_ms": rounded(max(times)),
        },
    )


def interactive(context: Any, setup: dict[str, Any], loads: int, events: int) -> Measurement:
    path = f"/sessions/{setup['stored']}/waterfall/"
    load(context, path)  # warms the server (and derives the run's spans once)
    timings = [load(context, path) for _ in range(loads)]
    value = rounded(statistics.median(t["ready"] for t in timings))
    log(f"waterfall: interactive in {value} ms")
    return Measurement(
        name="waterfall.interactive",
        value=value,
        unit="ms",
        target=f"< {TARGET_INTERACTIVE_MS:,.0f} ms",
        met=value < TARGET_INTERACTIVE_MS,
        details={
            "events": events,
            "loads": loads,
            "html_response_end_ms": rounded(statistics.median(t["html"] for t in timings)),
            "spans_response_end_ms": rounded(statistics.median(t["spans"] for t in timings)),
            "key_response_ms": rounded(statistics.median(t["key"] for t in timings)),
            "rows_in_dom": timings[-1]["rows"],
            "max_ms": rounded(max(t["ready"] for t in timings)),
        },
    )


def load(context: Any, path: str) -> dict[str, float]:
    page = context.new_page()
    try:
        page.add_init_script(READY_CLOCK)
        page.goto(path, wait_until="commit")
        page.wait_for_function("() => window.__benchReady !== undefined", timeout=60_000)
        ready = page.evaluate("window.__benchReady")
        html = page.evaluate("performance.getEntriesByType('navigation')[0].responseEnd")
        spans = page.evaluate(
            "performance.getEntriesByType('resource').find(r => r.name.includes('/spans/'))"
            ".responseEnd"
        )
        key = page.evaluate(KEY_RESPONSE)
        assert key["moved"], "the key press moved nothing"
        return {"ready": ready, "html": html, "spans": spans, "key": key["ms"], "rows": key["rows"]}
    finally:
        page.close()


def live_frames(context: Any, server: DaphneServer, setup: dict[str, Any]) -> Measurement:
    page = context.new_page()
    try:
        page.goto(f"/sessions/{setup['live']}/waterfall/")
        page.wait_for_selector("body[data-ready=waterfall]")
        page.wait_for_selector("#conn[data-state=live]")
        page.evaluate(FRAME_CLOCK)
        _, raw = request(
            server, setup["token"], f"/api/sessions/{setup['live']}/messages/", {"text": "go"}
        )
        run_id = json.loads(raw)["id"]
        started = time.perf_counter()
        page.wait_for_selector(".wf-run .badge.succeeded", timeout=600_000)
        seconds = time.perf_counter() - started
        frames = page.evaluate("window.__frames")[5:]  # not the page's own first frames
        long_frames = page.evaluate("window.__longFrames")
    finally:
        page.close()
    _, body = request(server, setup["token"], f"/api/runs/{run_id}/")
    run = json.loads(body)
    events, streamed_s = stored_events(server, setup)
    value = rounded(percentile(frames, 99))
    rate = events / streamed_s
    log(f"waterfall: live frames p99 {value} ms, max {max(frames):.0f} ms at {rate:.0f} events/s")
    if rate < TARGET_LIVE_RATE:
        log(f"waterfall: the live run stored under {TARGET_LIVE_RATE:.0f} events/s")
    return Measurement(
        name="waterfall.live_frames",
        value=value,
        unit="ms",
        target=f"< {TARGET_FRAME_MS:,.0f} ms",
        met=value < TARGET_FRAME_MS,
        details={
            "events": events,
            "seconds": rounded(seconds),
            "streamed_s": rounded(streamed_s),
            "events_per_s": rounded(rate),
            "events_per_s_met": rate >= TARGET_LIVE_RATE,
            "frames": len(frames),
            "p50_ms": rounded(percentile(frames, 50)),
            "max_ms": rounded(max(frames)),
            "frames_over_50_ms": sum(1 for f in frames if f > TARGET_FRAME_MS),
            "long_animation_frames": len(long_frames),
            "longest_animation_frame_ms": rounded(max(long_frames, default=0.0)),
            "run_status": run["status"],
        },
    )


def stored_events(server: DaphneServer, setup: dict[str, Any]) -> tuple[int, float]:
    """How many events the live run stored, and over how many seconds (its first event's
    time to its last's: the rate the page received them at, without the wait for the
    run to start or for the page to show its end)."""
    after, times = 0, []
    while True:
        path = f"/api/sessions/{setup['live']}/events/?after={after}&limit=500"
        page = json.loads(request(server, setup["token"], path)[1])
        times += [datetime.fromisoformat(e["created_at"]) for e in page["results"]]
        if not page["next"]:
            return len(times), max((times[-1] - times[0]).total_seconds(), 1e-3)
        after = page["last_seq"]


def measure(
    server: DaphneServer, setup: dict[str, Any], loads: int, events: int
) -> list[Measurement]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(base_url=server.url, viewport={"width": 1366, "height": 800})
        login(context, server, setup)
        found = [interactive(context, setup, loads, events), live_frames(context, server, setup)]
        browser.close()
    return found


def login(context: Any, server: DaphneServer, setup: dict[str, Any]) -> None:
    """A session cookie for the bench user, made by Django in the server's environment."""
    code = (
        "from django.contrib.auth import get_user_model; from django.test import Client; "
        "c = Client(); c.force_login(get_user_model().objects.get(username='bench')); "
        "print(c.cookies['sessionid'].value)"
    )
    cookie = server.manage("shell", "-c", code).stdout.strip().splitlines()[-1]
    context.add_cookies([{"name": "sessionid", "value": cookie, "url": server.url}])


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--events", type=int, default=10_000)
    args.add_argument("--live-steps", type=int, default=300, help="four stored events each")
    args.add_argument("--loads", type=int, default=5)
    args.add_argument("--requests", type=int, default=20)
    args.add_argument("--prepare", action="store_true", help="(internal)")
    ns = args.parse_args()
    if ns.prepare:
        prepare(ns.events, ns.live_steps)
        return
    with tempfile.TemporaryDirectory(prefix="studio-bench-waterfall-") as tmp:
        server, setup = prepared_server(Path(tmp) / "data", ns.events, ns.live_steps)
        server.start()
        try:
            results = [
                spans_api(server, setup, ns.requests),
                *measure(server, setup, ns.loads, ns.events),
            ]
        finally:
            server.stop()
    for result in results:
        emit(result)


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    main()
