"""The waterfall in a real browser: a live multi-agent run (parallel branches, an agent
called as a tool, a loop, a wait for approval) drawn as lanes and arrows, open spans
that tick and close when their events arrive, the wall-time split, filters, keyboard
navigation, the detail panel, the links to the timeline and back, the demo agents, and
the page's span store checked against the spans API."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, until
from tests.support.daphne_server import DaphneServer
from tests.support.openai_server import OpenAIServer, unreachable_base_url

ENDED = {"succeeded", "failed", "cancelled", "interrupted"}
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "lead": [
        {
            "text": "Let me ask the helper.",
            "tool_calls": [{"name": "helper", "args": {"request": "find the facts"}}],
        },
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
        {"text": "The lead is done: {last_tool_result}"},
    ],
    "helper": [{"text": "Here are the facts you asked for."}],
    "left": [{"text": "The left branch looks at one side of it."}],
    "right": [{"text": "The right branch looks at the other side."}],
    "drafter": [{"text": "A draft of the answer."}],
    "checker": [{"text": "Not yet, once more."}, {"tool_calls": [{"name": "exit_loop"}]}],
}


def llm(name: str, suffix: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "model": f"{name}_{suffix}", "instruction": f"You are {name}.", **extra}


def team(api: Api, suffix: str) -> dict[str, Any]:
    """A sequential team: a lead that asks a helper agent as a tool and uses a
    calculator that needs approval, a parallel fan-out, and a loop of two passes."""
    for name, script in SCRIPTS.items():
        api.model(f"{name}_{suffix}", script=script, loop=name == "drafter", token_delay_s=0.04)
    approve = [{"name": "calculator", "requires_approval": True}]
    spec = {
        "type": "sequential",
        "name": f"team_{suffix}",
        "sub_agents": [
            llm("lead", suffix, tools=approve, agent_tools=[llm("helper", suffix)]),
            {
                "type": "parallel",
                "name": "fan",
                "sub_agents": [llm("left", suffix), llm("right", suffix)],
            },
            {
                "type": "loop",
                "name": "refine",
                "max_iterations": 3,
                "sub_agents": [
                    llm("drafter", suffix),
                    llm("checker", suffix, tools=[{"name": "exit_loop"}]),
                ],
            },
        ],
    }
    return api.agent(spec)


def new_session(api: Api, agent: dict[str, Any], title: str) -> str:
    return str(api.post("/api/sessions/", {"agent": agent["id"], "title": title})["id"])


def session_on(
    api: Api, server: OpenAIServer, model: str, agent: str, title: str, **spec: Any
) -> str:
    """A new session of agent ``agent`` (it answers; ``spec``, more of its spec) on model
    config ``model``, the OpenAI-compatible ``server``'s model, its answers not streamed."""
    body = {"name": model, "provider": "openai_compatible", "model": "m"}
    options = {"streaming": False}
    api.post("/api/models/", {**body, "base_url": server.base_url, "options": options})
    made = api.agent({"name": agent, "model": model, "instruction": "Answer.", **spec})
    return new_session(api, made, title)


def wait_for(condition: Any, what: str, within: float = 30.0) -> Any:
    """Polls ``condition`` (observable state through the API, with a bound)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def pending_approval(api: Api, session_id: str) -> dict[str, Any]:
    def asked() -> dict[str, Any] | None:
        events = api.events(session_id)
        decided = {e["approval"]["call_id"] for e in events if e["type"] == "approval_decision"}
        asks = [e["approval"] for e in events if e["type"] == "approval_request"]
        return next((a for a in asks if a["call_id"] not in decided), None)

    return wait_for(asked, "an approval request")  # type: ignore[no-any-return]


def decide(api: Api, session_id: str, decision: str) -> None:
    asked = pending_approval(api, session_id)
    body = {"call_id": asked["call_id"], "args_hash": asked["args_hash"], "decision": decision}
    if decision == "deny":
        body["reason"] = "not now"
    api.post(f"/api/sessions/{session_id}/approvals/", body)


def last_run(api: Api, session_id: str) -> dict[str, Any]:
    return api.get(f"/api/runs/?session={session_id}")["results"][0]  # type: ignore[no-any-return]


def ended_run(api: Api, session_id: str) -> dict[str, Any]:
    """The session's last run once it has ended and its figures are written: a run
    cancelled by request reads ``cancelled`` at once, and gets its timing when its
    executor lets go of it (``records.end_run``)."""

    def ended() -> dict[str, Any] | None:
        run = last_run(api, session_id)
        return run if run["status"] in ENDED and run["timing"] is not None else None

    return wait_for(ended, "the run to end")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def finished(api: Api) -> str:
    """A session whose team run ended: the calculator call was denied."""
    session_id = new_session(api, team(api, "done"), "a finished team")
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "work it out as a team"})
    decide(api, session_id, "deny")
    assert ended_run(api, session_id)["status"] == "succeeded"
    return session_id


def open_waterfall(page: Page, session_id: str, query: str = "") -> None:
    page.goto(f"/sessions/{session_id}/waterfall/{query}")
    expect(page.locator("body")).to_have_attribute("data-ready", "waterfall")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")


def waterfall_and_timeline(page: Page, session_id: str) -> Page:
    """Open the session's waterfall in ``page`` and its timeline in a new page of the
    same context, both live: a person watching a run from both sides."""
    open_waterfall(page, session_id)
    timeline = page.context.new_page()
    timeline.goto(f"/sessions/{session_id}/")
    expect(timeline.locator("#conn")).to_have_attribute("data-state", "live")
    return timeline


def row(page: Page, name: str, kind: str | None = None) -> Any:
    selector = f".wf-row[data-name='{name}']" + (f"[data-kind='{kind}']" if kind else "")
    return page.locator(selector)


STORE_OF_EVENTS = """async ([events, run]) => {
  const { SpanStore, micros, toWire } = await import("/static/studio/js/lib/spans.js");
  const { wallTime } = await import("/static/studio/js/lib/span_timing.js");
  const store = new SpanStore();
  const id = run.invocation_id;
  for (const event of events) if (event.invocation_id === id) store.observe(event);
  const why = `${run.error_code}: ${run.error_message}`;
  store.finish(id, run.ended_at, run.status === "succeeded" ? null : why);
  const spans = store.spans(id);
  const timing = wallTime(run.created_at, run.started_at, micros(run.ended_at), spans);
  return { spans: spans.map(toWire), timing };
}"""


def numbers(value: Any) -> Any:
    """``value`` with whole floats as integers: a number crosses from the page as
    JavaScript writes it (400, where Python's JSON has 400.0)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [numbers(item) for item in value]
    return value


def assert_page_store_matches_the_api(
    page: Page, api: Api, session_id: str, run_id: str | None = None
) -> None:
    """The page's span mechanics (lib/spans.js, lib/span_timing.js), fed the run's stored
    events, give exactly the spans API's spans and the run's stored wall-time split (of
    the session's last run, or of run ``run_id``)."""
    run = api.get(f"/api/runs/{run_id}/") if run_id else last_run(api, session_id)
    expected = api.get(f"/api/runs/{run['id']}/spans/")["spans"]
    got = page.evaluate(STORE_OF_EVENTS, [api.events(session_id), run])
    canon = lambda spans: [json.dumps(numbers(s), sort_keys=True) for s in spans]  # noqa: E731
    assert canon(got["spans"]) == canon(expected)
    assert got["timing"] == pytest.approx(run["timing"], abs=0.002)


def test_a_live_multi_agent_run_draws_lanes_arrows_and_open_spans_that_close(
    page: Page, api: Api
) -> None:
    session_id = new_session(api, team(api, "live"), "a live team")
    open_waterfall(page, session_id)
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "work it out as a team"})

    # The call waits for approval: the call and its wait are open, and tick; the run
    # parked, so its agents' spans end there, marked so.
    wait = row(page, "approval", "human")
    expect(wait).to_have_attribute("data-status", "open")
    opened = page.locator(".wf-span[data-status=open]")
    expect(opened).to_have_count(2)
    names = opened.evaluate_all("els => els.map(e => e.dataset.name)")
    assert sorted(names) == ["approval", "calculator"]
    for name in ("lead", "team_live"):
        expect(row(page, name, "agent").locator(".wf-chip", has_text="parked")).to_be_visible()
    expect(wait.locator(".wf-bar.open")).to_be_visible()
    clock = wait.locator(".wf-dur")
    first = clock.inner_text()
    assert first.endswith("…")
    expect(clock).not_to_have_text(first)  # the open span grows as time passes
    expect(page.locator(".wf-run-head .badge")).to_have_text("waiting")
    expect(page.locator(".wf-figures")).to_contain_text("waiting for your approval")
    # The helper runs in its own lane, called from the lead's tool call.
    helper = row(page, "helper", "agent")
    expect(helper.locator(".wf-chip.via")).to_have_text("called as a tool")
    expect(helper).to_have_attribute("data-status", "ok")
    expect(page.locator(".wf-arrow.call")).to_have_count(1)
    screenshot(page, "waterfall-live-waiting")

    decide(api, session_id, "approve")
    expect(wait).to_have_attribute("data-status", "ok")  # closed by its event
    # One span per agent across the parking: the run went on in it.
    expect(row(page, "lead", "agent")).to_have_count(1)
    expect(row(page, "lead", "agent").locator(".wf-chip")).to_contain_text(["parked, went on"])
    expect(page.locator(".wf-run-head .badge")).to_have_text("succeeded")
    expect(page.locator(".wf-span[data-status=open]")).to_have_count(0)
    expect(page.locator(".wf-bar.open")).to_have_count(0)
    # Parallel branches in lanes of their own; only one of them sets the end.
    for name in ("fan", "left", "right", "refine", "drafter", "checker"):
        expect(
            page.locator(f".wf-row[data-name='{name}'], .wf-lane[data-lane='{name}']").first
        ).to_be_visible()
    critical = [
        row(page, n, "agent").evaluate("e => e.classList.contains('crit')")
        for n in ("left", "right")
    ]
    assert sorted(critical) == [False, True]
    # The loop's two passes: the lanes say so and the axis marks where each began.
    expect(page.locator(".wf-lane[data-lane='drafter'] .wf-chip")).to_have_text("2 runs")
    expect(page.locator(".wf-iter-label")).to_have_text(["↻1", "↻2"])
    expect(row(page, "drafter", "agent").locator(".wf-chip.iter")).to_have_text(["#1", "#2"])
    # The header: where the wall time went, and the tokens.
    wall = page.locator(".wf-run .wall-time")
    for part in ("model", "tools", "human", "overhead"):
        expect(wall.locator(f"[data-part={part}]")).to_be_visible()
    expect(page.locator(".wf-figures")).to_contain_text(
        re.compile(r"[\d,]+ in · [\d,]+ out tokens")
    )
    page.set_viewport_size({"width": 1280, "height": 900})
    screenshot(page, "waterfall-team-1280", full_page=True)
    assert_page_store_matches_the_api(page, api, session_id)  # costs summed alike too
    spans = api.get(f"/api/runs/{last_run(api, session_id)['id']}/spans/")["spans"]
    root = next(s for s in spans if s["parent_span_id"] is None)
    assert root["cost"]["complete"] and root["cost"]["calls"] == sum(
        s["kind"] == "model" for s in spans
    )


def test_keys_filters_and_the_detail_panel_explain_each_span(
    page: Page, api: Api, finished: str
) -> None:
    open_waterfall(page, finished)
    chart = page.locator(".wf-chart")
    row(page, "team_done", "agent").click()
    expect(page.locator("#wf-detail h2")).to_contain_text("team_done")
    chart.press("ArrowDown")
    expect(page.locator("#wf-detail h2")).to_contain_text("lead")
    chart.press("ArrowDown")
    detail = page.locator("#wf-detail")
    expect(detail.locator("h2")).to_contain_text("Model call of lead")
    expect(detail.locator(".wf-io").first).to_contain_text("work it out as a team")  # its input
    expect(detail).to_contain_text("Let me ask the helper.")  # its output
    expect(detail.locator(".wf-facts")).to_contain_text(re.compile(r"Tokens[\d,]+ in · [\d,]+ out"))
    selected = chart.get_attribute("aria-activedescendant")
    assert selected and page.locator(f"#{selected}").get_attribute("data-kind") == "model"

    row(page, "calculator", "tool").click()
    expect(detail.locator("h2")).to_contain_text("calculator")
    expect(detail).to_contain_text('"expression": "6 * 7"')
    expect(detail.locator(".wf-facts")).to_contain_text("Outcomedenied")
    expect(detail.locator(".wf-facts")).to_contain_text("Errordenied: a person declined")
    chart.press("ArrowRight")  # into the wait it holds
    expect(detail.locator("h2")).to_contain_text("approval")
    expect(detail.locator(".wf-facts")).to_contain_text("Decisiondenied by demo")
    expect(detail.locator(".wf-facts")).to_contain_text("Reasonnot now")
    chart.press("ArrowLeft")  # back to its parent
    expect(detail.locator("h2")).to_contain_text("calculator")
    screenshot(page, "waterfall-detail")

    # Zoom in around the selection and back out.
    ticks = page.locator(".wf-tick:not(.wf-iter-label)")
    fitted = ticks.all_inner_texts()
    chart.press("z")
    expect(ticks).not_to_have_text(fitted)
    chart.press("0")
    expect(ticks).to_have_text(fitted)

    # Errors only: the denied call and the lanes that hold it.
    page.check("#wf-errors")
    expect(page.locator(".wf-span[data-status=error]")).to_have_count(1)
    expect(page.locator(".wf-span:not([data-status=error])[data-kind=tool]")).to_have_count(0)
    page.uncheck("#wf-errors")
    # Kinds and agents.
    for kind in ("agent", "model", "human"):
        page.uncheck(f"input[name=kind][value={kind}]")
    tools = page.locator(".wf-span[data-kind=tool]").evaluate_all(
        "els => els.map(e => e.dataset.name)"
    )
    assert sorted(tools) == ["calculator", "exit_loop", "helper"]
    expect(page.locator(".wf-span[data-kind=model]")).to_have_count(0)
    for kind in ("agent", "model", "human"):
        page.check(f"input[name=kind][value={kind}]")
    page.select_option("#wf-agent", "left")
    expect(page.locator(".wf-span[data-kind=model]")).to_have_count(1)
    expect(row(page, "right")).to_have_count(0)
    page.select_option("#wf-agent", "")
    page.select_option("#wf-colour", "heat")
    expect(page.locator(".wf-bar[class*=heat-]").first).to_be_visible()
    page.select_option("#wf-colour", "kind")
    expect(page.locator(".wf-bar[class*=heat-]")).to_have_count(0)

    # A lane of two runs closes to one line, and opens again.
    lane = page.locator(".wf-lane[data-lane='drafter']")
    lane.click()
    chart.press("ArrowLeft")
    expect(lane).to_have_attribute("aria-expanded", "false")
    expect(row(page, "drafter", "agent")).to_have_count(0)
    expect(lane.locator(".wf-lane-bar")).to_have_count(2)
    chart.press("ArrowRight")
    expect(row(page, "drafter", "agent")).to_have_count(2)


def test_a_span_links_to_its_events_in_the_timeline_and_back(
    page: Page, api: Api, finished: str
) -> None:
    page.goto(f"/sessions/{finished}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    page.click("#to-waterfall")  # one click from the timeline
    expect(page.locator("body")).to_have_attribute("data-ready", "waterfall")
    row(page, "calculator", "tool").click()
    opened = page.locator("#wf-detail a[data-seq]").first
    seq = opened.get_attribute("data-seq")
    opened.click()
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    focused = page.locator(f"#timeline .focused[data-seq='{seq}']")
    expect(focused).to_be_in_viewport()
    screenshot(page, "waterfall-to-timeline")

    # Back: each agent's step links to its span, each run to its waterfall.
    step = page.locator(".step[data-agent=helper] > .step-head .step-waterfall")
    step.click()
    expect(page.locator("body")).to_have_attribute("data-ready", "waterfall")
    expect(page).to_have_url(re.compile(r"/waterfall/\?invocation=\w+#span-[0-9a-f]+$"))
    expect(page.locator("#wf-detail h2")).to_contain_text("helper")
    expect(page.locator(".wf-row.selected")).to_have_attribute("data-name", "helper")
    expect(page.locator("h1")).to_have_text("Waterfall of one run")
    page.go_back()
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    page.locator(".inv .inv-waterfall").first.click()
    expect(page.locator(".wf-run")).to_have_count(1)


def test_a_deep_timeline_on_a_phone_keeps_each_events_kind_fork_and_figures_tidy(
    page: Page, finished: str
) -> None:
    """Three agents deep (team, refine, drafter) in a phone's window: an event's kind and
    its Fork button share a row, and its figures start at the left of the next. They
    stacked right-aligned, one chip a line, with Fork alone on a line below them."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.goto(f"/sessions/{finished}/")
        expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
        deep = page.locator(".step .step .step .ev .line:has(.figures .chip):has(.fork-here)")
        expect(deep.first).to_be_visible()
        screenshot(page, "timeline-deep-390", full_page=True)
        lines = deep.evaluate_all(
            """lines => lines.map(line => {
                const box = sel => line.querySelector(sel).getBoundingClientRect();
                const middle = b => (b.top + b.bottom) / 2;
                return {kind: middle(box(".kind")), fork: middle(box(".fork-here")),
                        line: line.getBoundingClientRect().left, chip: box(".chip").left};
            })"""
        )
        assert len(lines) >= 3  # the drafter's replies and the checker's
        for line in lines:
            assert abs(line["kind"] - line["fork"]) <= 2, line  # one row
            assert abs(line["chip"] - line["line"]) <= 1, line  # from the left
    finally:
        page.set_viewport_size({"width": 1366, "height": 800})


def test_cancelling_a_waiting_run_closes_its_open_spans_as_errors(page: Page, api: Api) -> None:
    agent = api.agent(
        {
            "name": "careful_waterfall",
            "model": "scripted",
            "instruction": "Use the calculator.\nResult: {last_tool_result}",
            "tools": [{"name": "calculator", "requires_approval": True}],
        }
    )
    session_id = new_session(api, agent, "cancelled while waiting")
    open_waterfall(page, session_id)
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "what is 2 + 2"})
    expect(row(page, "approval", "human")).to_have_attribute("data-status", "open")
    api.post(f"/api/runs/{last_run(api, session_id)['id']}/cancel/")

    expect(page.locator(".wf-run-head .badge")).to_have_text("cancelled")
    expect(page.locator(".wf-span[data-status=open]")).to_have_count(0)
    expect(row(page, "careful_waterfall", "agent")).to_have_attribute("data-status", "error")
    row(page, "careful_waterfall", "agent").click()
    expect(page.locator("#wf-detail .wf-facts")).to_contain_text("cancelled")
    assert_page_store_matches_the_api(page, api, session_id)


CUT_TICKS = """() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => {
    const track = document.querySelector(".wf-ticks").getBoundingClientRect();
    done([...document.querySelectorAll(".wf-tick:not(.wf-iter-label)")]
        .filter((tick) => {
            const box = tick.getBoundingClientRect();
            return box.left < track.left - 0.5 || box.right > track.right + 0.5;
        })
        .map((tick) => tick.textContent));
})))"""
"""The time axis's labels the track cuts off, once the chart has drawn at its width."""

CROWDED_TICKS = """() => new Promise((done) => requestAnimationFrame(() => {
    const text = (el) => { const r = document.createRange(); r.selectNodeContents(el);
                           return [el.textContent, r.getBoundingClientRect()]; };
    const times = [...document.querySelectorAll(".wf-tick:not(.wf-iter-label)")].map(text);
    const meet = (a, b) => a.left < b.right && b.left < a.right
        && a.top < b.bottom && b.top < a.bottom;
    done([...document.querySelectorAll(".wf-iter-label")].map(text).flatMap(([n, a]) => times
        .filter(([, b]) => meet(a, b)).map(([t]) => `${n} over ${t}`)));
}))"""
"""A loop iteration's number written over a time label on the axis."""


def test_the_demo_agents_draw_their_waterfall_out_of_the_box(page: Page, api: Api) -> None:
    agents = {a["name"]: a for a in api.get("/api/agents/")["results"]}
    pipeline = new_session(api, agents["pipeline"], "the demo pipeline")
    api.post(f"/api/sessions/{pipeline}/messages/", {"text": "solar power"})
    helpdesk = new_session(api, agents["helpdesk"], "the demo helpdesk")
    ended_run(api, pipeline)
    api.post(f"/api/sessions/{helpdesk}/messages/", {"text": "what is 6 * 7?"})
    loop = new_session(api, agents["refine_loop"], "the demo loop")
    ended_run(api, helpdesk)
    api.post(f"/api/sessions/{loop}/messages/", {"text": "a slogan for a bakery"})
    ended_run(api, loop)

    open_waterfall(page, pipeline)
    for name in ("pipeline", "researcher", "fact_checker", "writer", "editor"):
        expect(row(page, name, "agent")).to_be_visible()
    expect(row(page, "fact_checker", "agent").locator(".wf-chip.via")).to_have_text(
        "called as a tool"
    )
    expect(page.locator(".wf-arrow.call")).to_have_count(1)
    # The demo model takes its time like a hosted one: most of the run is model time.
    expect(page.locator(".wall-time [data-part=model]")).to_be_visible()
    screenshot(page, "waterfall-demo-pipeline")
    # Every label of the time axis is whole at any width: one near the right edge is
    # written left of its line, not cut off by the edge.
    for width in range(1000, 1400, 40):
        page.set_viewport_size({"width": width, "height": 800})
        # (Drawn again a frame or two after the window's new width reaches the chart.)
        until(lambda: page.evaluate(CUT_TICKS) == [], f"whole axis labels at {width} px", 5)
    page.set_viewport_size({"width": 1366, "height": 800})

    open_waterfall(page, helpdesk)
    expect(row(page, "math_tutor", "agent").locator(".wf-chip.via")).to_have_text("handed over")
    expect(page.locator(".wf-arrow.transfer")).to_have_count(1)
    expect(row(page, "transfer_to_agent", "tool").locator(".wf-chip.via")).to_have_text(
        "→ math_tutor"
    )
    page.set_viewport_size({"width": 390, "height": 844})
    screenshot(page, "waterfall-demo-helpdesk-390", full_page=True)
    page.set_viewport_size({"width": 1366, "height": 800})

    # The loop's first pass begins with the run, at "0": its number is written on a line
    # of its own, never over a time label, at any width.
    open_waterfall(page, loop)
    expect(page.locator(".wf-iter-label")).to_have_text(["↻1", "↻2"])
    for width in (1366, 1280, 1024, 390):
        page.set_viewport_size({"width": width, "height": 800})
        until(lambda: page.evaluate(CROWDED_TICKS) == [], f"clear loop marks at {width} px", 5)
    screenshot(page, "waterfall-demo-refine-loop")


def test_the_key_facts_call_after_a_turn_is_drawn_costed_and_timed_as_the_model_s(
    page: Page, api: Api
) -> None:
    """Saving a turn's key facts to memory is a model call after the agent is done: a
    span of the root agent's lane, in the header's model time and cost."""
    api.model("facts_wf", script=[{"text": "Noted, Ada."}], loop=True)
    spec = {"name": "facts_wf", "model": "facts_wf", "instruction": "You remember."}
    agent = api.agent({**spec, "memory": {"tools": False, "save_at_end": True}})
    session_id = new_session(api, agent, "key facts")
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "I am Ada from Oslo"})
    assert ended_run(api, session_id)["status"] == "succeeded"
    open_waterfall(page, session_id)
    expect(row(page, "key facts", "model")).to_have_count(1)
    assert_page_store_matches_the_api(page, api, session_id)  # lib/spans.js reads it alike
    spans = api.get(f"/api/runs/{last_run(api, session_id)['id']}/spans/")["spans"]
    root = next(s for s in spans if s["parent_span_id"] is None)
    assert root["cost"]["calls"] == 2  # the answer and the key facts


def test_a_key_facts_call_that_fails_is_in_the_record_and_the_turn_stands(
    page: Page, api: Api
) -> None:
    """The model refuses the call that saves a turn's key facts: the run still
    succeeded, and its record says what happened instead of leaving it out: a failed
    "key facts" span in the root agent's lane saying why, and the timeline's error row
    (not fatal: the run went on to its end). The next turn's key facts and summary are
    model calls in the timeline's totals, as in the cost roll-ups."""
    with OpenAIServer() as server:
        server.reply("Noted, Ada.")
        server.fail(400, message="the key facts request was refused")
        server.reply("Tea it is.")
        server.reply('["Ada likes tea"]')
        server.reply("Ada, from Oslo, likes tea.")
        memory = {"tools": False, "save_at_end": True}
        compaction = {"threshold": 2, "keep_last": 1}
        session_id = session_on(
            api, server, "facts_ko", "forgetful", "lost facts", memory=memory, compaction=compaction
        )
        api.post(f"/api/sessions/{session_id}/messages/", {"text": "I am Ada from Oslo"})
        assert ended_run(api, session_id)["status"] == "succeeded"
        assert len(server.requests) == 2  # the answer, then the key facts call
        first = last_run(api, session_id)["id"]
        api.post(f"/api/sessions/{session_id}/messages/", {"text": "I like tea"})
        wait_for(lambda: len(api.get(f"/api/runs/?session={session_id}")["results"]) == 2, "run 2")
        assert ended_run(api, session_id)["status"] == "succeeded"
        assert len(server.requests) == 5  # the answer, the key facts and the summary
    open_waterfall(page, session_id, f"?run={first}")
    facts = row(page, "key facts", "model")
    expect(facts).to_have_attribute("data-status", "error")
    facts.click()
    detail = page.locator("#wf-detail")
    expect(detail).to_contain_text("key_facts_failed: no key facts were saved: ")
    expect(detail).to_contain_text("the key facts request was refused")
    assert_page_store_matches_the_api(page, api, session_id, first)  # lib/spans.js alike
    assert_page_store_matches_the_api(page, api, session_id)  # the summary's turn too
    screenshot(page, "waterfall/key-facts-failed")
    page.goto(f"/sessions/{session_id}/")
    error = page.locator(".ev.error")
    expect(error).to_contain_text("key_facts_failed")
    expect(error).to_contain_text("no key facts were saved")
    expect(page.locator(".inv .badge")).to_have_text(["succeeded", "succeeded"])
    expect(page.locator(".ev.compaction")).to_have_count(1)
    totals = page.locator("#totals dt:text-is('Model calls') + dd")
    expect(totals).to_contain_text(re.compile(r"^4 · avg .* · 1 failed$"))
    screenshot(page, "waterfall/key-facts-failed-timeline", full_page=True)


def summary_held(
    page: Page, api: Api, server: OpenAIServer, model: str, agent: str
) -> tuple[str, Page]:
    """A session of ``agent`` on ``server``'s model ``model`` that summarises after its
    second turn, watched from its waterfall (``page``) and its timeline (returned) while
    ``server`` holds that summary (until ``release()``), drawn open on its span."""
    server.reply("Noted.")
    server.reply("Tea it is.")
    server.reply("They talked about tea.", hold_after=0)
    compaction = {"threshold": 2, "keep_last": 1}
    session_id = session_on(api, server, model, agent, "a summary", compaction=compaction)
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "hello"})
    assert ended_run(api, session_id)["status"] == "succeeded"
    timeline = waterfall_and_timeline(page, session_id)
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "I like tea"})
    server.wait_until_held(timeout=30)
    expect(row(page, "summary", "model")).to_have_attribute("data-status", "open")
    return session_id, timeline


def test_a_summary_slow_to_answer_is_drawn_live_after_the_agent_is_done(
    page: Page, api: Api
) -> None:
    """A long session's summary, made once the turn's agent is done, held by its model:
    the waterfall draws it open on its own span in the root agent's lane, the timeline
    says the agent is summarising the session, and so does the playground's status line
    (not "Thinking…" under the answer), until it is stored."""
    with OpenAIServer() as server:
        session_id, timeline = summary_held(page, api, server, "summing", "brief")
        summary = row(page, "summary", "model")
        calling = timeline.locator(".ev.compaction.provisional")
        expect(calling).to_contain_text("brief · summarising the session")
        playground = page.context.new_page()
        playground.goto(f"/playground/?session={session_id}")
        status = playground.locator("#chat-waiting")
        expect(status).to_have_text("Summarising the session…")  # the call, sent again
        expect(playground.locator(".msg.agent .bubble").last).to_have_text("Tea it is.")
        screenshot(timeline, "waterfall/slow-summary-timeline")
        screenshot(playground, "waterfall/slow-summary-playground")
        screenshot(page, "waterfall/slow-summary-open")
        assert last_run(api, session_id)["status"] == "running"
        server.release()
        expect(summary).to_have_attribute("data-status", "ok")
        expect(timeline.locator(".ev.compaction")).to_contain_text("They talked about tea.")
        expect(calling).to_have_count(0)
        expect(status).to_have_text("")
        timeline.close()
        playground.close()
    assert ended_run(api, session_id)["status"] == "succeeded"
    assert_page_store_matches_the_api(page, api, session_id)


def test_cancelling_while_the_summary_is_made_stops_the_run_at_once(page: Page, api: Api) -> None:
    """A run cancelled once its agent is done, while its model still makes the session's
    summary: the run ends cancelled at once, not when the model answers, and the
    summary's span says it was cut off, in the waterfall and in the timeline."""
    with OpenAIServer() as server:
        session_id, timeline = summary_held(page, api, server, "stop_sum", "halted")
        summary = row(page, "summary", "model")
        api.post(f"/api/runs/{last_run(api, session_id)['id']}/cancel/")
        assert ended_run(api, session_id)["status"] == "cancelled"  # the model holds on
        expect(summary).to_have_attribute("data-status", "error")
        summary.click()
        expect(page.locator("#wf-detail")).to_contain_text("(no answer: the call was cut off)")
        cut = timeline.locator(".ev.error", has_text="summary_cut_off")
        expect(cut).to_contain_text("the summary call was cut off after")
        expect(cut).not_to_contain_text("went on")
        totals = timeline.locator("#totals dt:text-is('Model calls') + dd")
        expect(totals).to_contain_text(re.compile(r"^2 · avg .* · 1 cut off$"))
        screenshot(timeline, "waterfall/summary-cut-off-timeline", full_page=True)
        timeline.close()
        server.release()
    assert_page_store_matches_the_api(page, api, session_id)


def test_a_model_that_never_answered_is_a_failed_call_where_its_time_went(
    page: Page, api: Api
) -> None:
    """A model whose every attempt failed (nothing listens on its port): the seconds the
    run spent retrying it are a failed model call on the waterfall, in the header's model
    time, and the timeline and the detail say how many times it was tried."""
    base_url = unreachable_base_url()
    body = {"name": "unreachable", "provider": "openai_compatible", "model": "m"}
    api.post("/api/models/", {**body, "base_url": base_url, "options": {"streaming": False}})
    agent = api.agent({"name": "stranded", "model": "unreachable", "instruction": "Answer."})
    session_id = new_session(api, agent, "a model that never answered")
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "hello"})
    run = ended_run(api, session_id)
    assert run["status"] == "failed" and run["error_code"] == "model_connection_error"
    assert run["timing"]["model_ms"] > 0  # its retries: the model's time, not overhead
    open_waterfall(page, session_id)
    # One failure, two failed spans: the call, and the agent it ended.
    expect(page.locator(".wf-run .chip.error")).to_have_text("2 failed spans")
    call = row(page, "model", "model")
    expect(call).to_have_attribute("data-status", "error")
    call.click()
    detail = page.locator("#wf-detail")
    expect(detail.locator(".wf-facts")).to_contain_text("Attempts4")
    expect(detail).to_contain_text("(no answer: the call failed)")
    expect(detail).to_contain_text("attempt 3: model_connection_error: ")  # retried after
    assert_page_store_matches_the_api(page, api, session_id)  # lib/spans.js reads it alike
    page.goto(f"/sessions/{session_id}/")
    expect(page.locator(".ev.error [data-attempts]")).to_have_text("4 attempts")
    expect(page.locator(".ev.model_retry")).to_have_count(3)
    chat = page.context.new_page()  # the chat: the error's line alone says the attempts
    chat.goto(f"/playground/?session={session_id}")
    expect(chat.locator(".msg.error")).to_contain_text("after 4 attempts")
    expect(chat.locator(".msg.retry, .msg.retried")).to_have_count(0)
    chat.close()
    totals = page.locator("#totals")  # the call was made, and failed: not "0" alone
    expect(totals.locator("dt:text-is('Model calls') + dd")).to_have_text(
        "0 · 1 failed · 3 retries"
    )
    screenshot(page, "waterfall/failed-model-call-timeline")


def test_a_call_being_retried_shows_each_retry_live_and_its_attempts_after(
    page: Page, api: Api
) -> None:
    """The timeline open as the run goes: each failed attempt of the model call arrives
    as a Retry row saying which attempt failed, why and when the next goes, before the
    answer; the waterfall's detail then counts the call's attempts and lists the failures."""
    with OpenAIServer() as server:
        server.fail(503, times=2, message="overloaded, try later")
        server.reply("Third time lucky.")
        session_id = session_on(
            api, server, "flaky", "patient", "a model that answers at the third try"
        )
        page.goto(f"/sessions/{session_id}/")
        expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        api.post(f"/api/sessions/{session_id}/messages/", {"text": "hello"})
        retries = page.locator(".ev.model_retry")
        expect(retries).to_have_count(2)
        expect(retries.first).to_contain_text("Attempt 1 of 4 failed; trying again in ")
        expect(retries.first).to_contain_text("(model_server_error: ")
        expect(retries.first).to_contain_text("overloaded, try later")
        expect(page.locator(".ev.agent_message")).to_contain_text("Third time lucky.")
        totals = page.locator("#totals dt:text-is('Model calls') + dd")
        expect(totals).to_contain_text("2 retries")
        screenshot(page, "waterfall/retried-model-call-timeline")
        assert ended_run(api, session_id)["status"] == "succeeded"
        assert len(server.requests) == 3
    open_waterfall(page, session_id)
    call = row(page, "model", "model")
    expect(call).to_have_attribute("data-status", "ok")
    expect(call.locator(".wf-chip.retry")).to_have_text("3 attempts")
    marks = call.locator(".wf-retry")  # where each failed attempt ended, on the call's bar
    expect(marks).to_have_count(2)
    expect(marks.first).to_have_attribute("title", re.compile(r"^attempt 1 failed: model_server"))
    bar, first, second = (e.bounding_box() for e in (call.locator(".wf-bar"), *marks.all()))
    assert bar and first and second
    assert bar["x"] < first["x"] < second["x"] < bar["x"] + bar["width"]
    screenshot(page, "waterfall/retried-model-call")
    call.click()
    detail = page.locator("#wf-detail")
    expect(detail.locator(".wf-facts")).to_contain_text("Attempts3")
    expect(detail).to_contain_text("attempt 2: model_server_error: ")
    expect(detail).to_contain_text("Third time lucky.")
    assert_page_store_matches_the_api(page, api, session_id)
    page.goto(f"/playground/?session={session_id}")  # the chat: one line for the call's retries
    expect(page.locator(".msg.agent")).to_contain_text("Third time lucky.")
    expect(page.locator(".msg.retry")).to_have_count(0)
    expect(page.locator(".msg.retried")).to_have_count(1)
    expect(page.locator(".msg.retried .who")).to_have_text("Retried")
    expect(page.locator(".msg.retried")).to_contain_text(
        "Answered at attempt 3, after 2 failed: model_server_error: "
    )


def test_a_model_call_slow_to_answer_is_drawn_live_before_its_answer(page: Page, api: Api) -> None:
    """A model that holds its answer: watched live, the waterfall draws the call on its
    own span, open and growing, and the timeline says the agent is calling its model (a
    waterfall opened after the call showed itself draws it too); the answer closes that
    same span and replaces the timeline's row."""
    with OpenAIServer() as server:
        server.reply("Slow but sure.", hold_after=0)  # the whole answer waits for release()
        session_id = session_on(api, server, "slow", "pondering", "a model that takes its time")
        timeline = waterfall_and_timeline(page, session_id)
        api.post(f"/api/sessions/{session_id}/messages/", {"text": "hello"})
        server.wait_until_held(timeout=30)
        call = row(page, "model", "model")
        expect(call).to_have_attribute("data-status", "open")
        calling = timeline.locator(".ev.agent_message.provisional")
        expect(calling).to_contain_text("pondering · calling the model (slow)…")
        screenshot(timeline, "waterfall/slow-model-call-timeline")
        screenshot(page, "waterfall/slow-model-call-open")
        late = page.context.new_page()
        open_waterfall(late, session_id)
        expect(row(late, "model", "model")).to_have_attribute("data-status", "open")
        late.close()
        call.click()
        expect(page.locator("#wf-detail")).to_contain_text("no answer yet: the call is in flight")
        assert last_run(api, session_id)["status"] == "running"  # held: nothing answered
        server.release()
        expect(call).to_have_attribute("data-status", "ok")
        expect(page.locator("#wf-detail")).to_contain_text("Slow but sure.")
        expect(timeline.locator(".ev.agent_message")).to_contain_text("Slow but sure.")
        expect(calling).to_have_count(0)
        timeline.close()
    assert ended_run(api, session_id)["status"] == "succeeded"
    assert_page_store_matches_the_api(page, api, session_id)


def test_a_model_call_cut_off_by_a_cancel_is_the_model_s_time_not_the_runner_s(
    page: Page, api: Api
) -> None:
    """A run cancelled while its model holds the answer: the call is stored cut off, on
    its span, so the wall-time split counts its seconds as the model's; the timeline's
    row and totals and the waterfall's detail say it was cut off, not that it failed."""
    with OpenAIServer() as server:
        server.reply("Never sent.", hold_after=0)
        session_id = session_on(
            api, server, "stalling", "waiting", "cancelled while the model thinks"
        )
        page.goto(f"/sessions/{session_id}/")
        expect(page.locator("#conn")).to_have_attribute("data-state", "live")
        api.post(f"/api/sessions/{session_id}/messages/", {"text": "hello"})
        server.wait_until_held(timeout=30)
        expect(page.locator(".ev.agent_message.provisional")).to_be_visible()
        time.sleep(1)  # the call is held a second at least
        api.post(f"/api/runs/{last_run(api, session_id)['id']}/cancel/", {})
        cut = page.locator(".ev.error").first
        expect(cut).to_contain_text("Error · model_call_cut_off")
        expect(cut).not_to_contain_text("went on")
        expect(cut).to_contain_text("the model call was cut off after ")
        expect(page.locator(".ev.error").nth(1)).to_contain_text("cancelled by request")
        totals = page.locator("#totals dt:text-is('Model calls') + dd")
        expect(totals).to_have_text("0 · 1 cut off")
        screenshot(page, "waterfall/cut-off-model-call-timeline")
    run = ended_run(api, session_id)
    assert run["status"] == "cancelled"
    timing = run["timing"]
    assert timing["model_ms"] >= 1000  # held a second and more: the model's, not overhead
    open_waterfall(page, session_id)
    call = row(page, "model", "model")
    expect(call).to_have_attribute("data-status", "error")
    call.click()
    detail = page.locator("#wf-detail")
    expect(detail).to_contain_text("(no answer: the call was cut off)")
    expect(detail).to_contain_text("model_call_cut_off: the model call was cut off after ")
    assert_page_store_matches_the_api(page, api, session_id)


def test_an_axis_label_at_the_tracks_right_edge_is_written_left_of_its_line(page: Page) -> None:
    """3 s on a 600 px track: a tick each second, the last one on the right edge, where a
    label written right of its line would be cut off by the edge."""
    page.goto("/sessions/")
    ticks = page.evaluate(
        "async () => (await import('/static/studio/js/lib/waterfall_view.js'))"
        ".axisTicks(0, 3_000_000, 0, 600)"
    )
    assert [(t["label"], round(t["left"]), t["end"]) for t in ticks] == [
        ("0", 0, False),
        ("1.0 s", 200, False),
        ("2.0 s", 400, False),
        ("3.0 s", 600, True),
    ]


def test_the_waterfall_is_its_owners_only(page: Page, api: Api, pages_server: DaphneServer) -> None:
    other = pages_server.manage(
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from studio.models import Session; "
        "bob = User.objects.create_user('bob_waterfall'); "
        "print(Session.objects.create(owner=bob, title='bob').pk)",
    )
    bobs = other.stdout.strip().splitlines()[-1]
    response = page.goto(f"/sessions/{bobs}/waterfall/")
    assert response is not None and response.status == 404
    response = page.request.get(f"/sessions/{bobs}/waterfall/?run=not-a-run")
    assert response.status == 404
