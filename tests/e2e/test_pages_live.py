"""The live timeline in a real browser: running steps, cancel, approvals, going offline
and coming back, a server restart, and a session of 10,000 events."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot, timeline_rows
from tests.support.daphne_server import DaphneServer

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}
WORDS = " ".join(f"word{n}" for n in range(40))


def start(api: Api, agent: dict[str, Any], text: str) -> tuple[str, dict[str, Any]]:
    session = api.post("/api/sessions/", {"agent": agent["id"]})
    return session["id"], session


def send(api: Api, session_id: str, text: str) -> dict[str, Any]:
    return api.post(f"/api/sessions/{session_id}/messages/", {"text": text})  # type: ignore[no-any-return]


def wait_for_run_end(api: Api, run_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Polls the run (observable state, with a bound) until it has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = api.get(f"/api/runs/{run_id}/")
        if run["status"] in ENDED:
            return run  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not end within {timeout_s}s")


def open_timeline(page: Page, session_id: str) -> None:
    page.goto(f"/sessions/{session_id}/")
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(page.locator("#conn")).to_have_attribute("data-state", "live")


def test_a_running_step_ticks_and_cancelling_stops_the_run(page: Page, api: Api) -> None:
    api.model("crawl", token_delay_s=0.25)
    agent = api.agent({"name": "talker", "model": "crawl", "instruction": f"Reply: {WORDS}"})
    session_id, _ = start(api, agent, "")
    open_timeline(page, session_id)
    send(api, session_id, "talk to me")

    expect(page.locator("#runbar")).to_be_visible()
    expect(page.locator("#run-waiting")).to_have_text("waiting for the model")
    provisional = page.locator(".ev.provisional .text.answer")  # beside its folded thinking
    expect(provisional).to_contain_text("word1 ")
    timer = page.locator(".step.running .step-head .chip").first
    first = timer.inner_text()
    expect(timer).not_to_have_text(first)  # the open step's clock ticks
    screenshot(page, "timeline-running")

    page.click("#cancel-run")
    expect(page.locator("#session-status")).to_have_text("cancelled")
    expect(page.locator("#runbar")).to_be_hidden()
    expect(page.locator(".ev.provisional")).to_have_count(0)
    expect(page.locator(".inv .badge.cancelled")).to_be_visible()
    expect(page.locator(".step.running")).to_have_count(0)
    stored = api.events(session_id)
    assert any(e["type"] == "error" and e["error"]["code"] == "cancelled" for e in stored)
    expect(page.locator(f"[data-seq='{stored[-1]['seq']}']")).to_be_attached()
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]


def test_a_tool_call_waits_for_approval_and_runs_with_the_edited_arguments(
    page: Page, api: Api
) -> None:
    agent = api.agent(
        {
            "name": "careful",
            "model": "scripted",
            "instruction": "Use the calculator.\nResult: Approved answer: {last_tool_result}",
            "tools": [{"name": "calculator", "requires_approval": True}],
        }
    )
    session_id, _ = start(api, agent, "")
    open_timeline(page, session_id)
    send(api, session_id, "what is 6 * 7")

    card = page.locator(".approval")
    tool = page.locator(".tool[data-tool=calculator]")
    expect(tool.locator(".args-box")).to_contain_text('"expression": "6 * 7"')
    expect(card).to_contain_text("Approval needed: calculator with the arguments above")
    expect(page.locator("#run-waiting")).to_have_text("waiting for your approval")
    expect(tool.locator(".state")).to_have_text("waiting for approval")
    expect(page.get_by_text("running…", exact=True)).to_have_count(0)
    expect(page.locator("#session-status")).to_have_text("waiting for approval")
    screenshot(page, "timeline-approval")
    card.get_by_role("button", name="Edit arguments").click()
    card.locator("textarea").fill('{"expression": "2 + 2"}')
    card.get_by_role("button", name="Approve with edits").click()

    expect(page.locator(".ev.agent_message .text").last).to_have_text("Approved answer: 4")
    expect(card).to_have_class("approval decided")
    expect(card).to_contain_text("Approved with edits by demo")
    # The line shows what ran, marked edited; the proposed arguments are a click away.
    expect(tool.locator(".outcome")).to_have_text("→ 4")
    expect(tool.locator("summary .preview")).to_have_text('{"expression":"2 + 2"}')
    expect(tool.locator("summary .chip.edited")).to_have_text("edited")
    expect(tool.locator(".args-box > pre")).to_contain_text('"expression": "2 + 2"')
    proposed = tool.locator(".proposed")
    expect(proposed.locator("pre")).to_be_hidden()
    proposed.locator("summary").click()
    expect(proposed.locator("pre")).to_contain_text('"expression": "6 * 7"')
    # Drawn in the order it happened: arguments, the card and its decision, the result.
    order = tool.evaluate(
        "el => [...el.querySelectorAll('.args-box, .approval, [data-type=approval_decision],"
        " .result')].map(e => e.className || e.dataset.type)"
    )
    assert order == ["args-box", "approval decided", "hint", "result"], order
    expect(page.locator("#session-status")).to_have_text("succeeded")
    wall = page.locator(".inv .wall-time")
    expect(wall).to_contain_text("Wall time")
    expect(wall.locator("[data-part=human]")).to_contain_text("waiting on a person")
    screenshot(page, "timeline-approved-with-edits")
    stored = api.events(session_id)
    decision = next(e for e in stored if e["type"] == "approval_decision")
    assert decision["approval"]["edited_args"] == {"expression": "2 + 2"}
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]
    run = api.get(f"/api/runs/?session={session_id}")["results"][0]
    timing = run["timing"]
    parts = ["queued_ms", "model_ms", "tools_ms", "human_ms", "overhead_ms"]
    assert sum(timing[p] for p in parts) == pytest.approx(timing["total_ms"], abs=0.01)
    assert timing["human_ms"] > timing["model_ms"] + timing["tools_ms"]


def careful_agent(api: Api, name: str, result: str = "Approved answer: {last_tool_result}") -> Any:
    return api.agent(
        {
            "name": name,
            "model": "scripted",
            "instruction": f"Use the calculator.\nResult: {result}",
            "tools": [{"name": "calculator", "requires_approval": True}],
        }
    )


def test_cancelling_while_a_call_waits_for_approval_leaves_nothing_running(
    page: Page, api: Api
) -> None:
    session_id, _ = start(api, careful_agent(api, "careful_cancel"), "")
    open_timeline(page, session_id)
    send(api, session_id, "what is 3 * 3")
    card = page.locator(".approval")
    expect(card.get_by_role("button", name="Approve")).to_be_visible()

    page.click("#cancel-run")
    expect(page.locator("#session-status")).to_have_text("cancelled")
    tool = page.locator(".tool[data-tool=calculator]")
    expect(tool.locator(".state")).to_have_text("not run")
    expect(tool.locator(".result .label")).to_contain_text("Not run")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(card.get_by_label("Reason")).to_have_count(0)
    expect(card).to_contain_text(
        "The run was cancelled before a decision was made; the call did not run."
    )
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)
    expect(page.locator(".step.running")).to_have_count(0)
    screenshot(page, "timeline-cancelled-while-waiting")
    stored = api.events(session_id)
    assert [e["type"] for e in stored[-2:]] == ["tool_response", "error"]
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]

    page.reload()  # the same after a reload, from the record alone
    expect(page.locator("body")).to_have_attribute("data-ready", "timeline")
    expect(tool.locator(".state")).to_have_text("not run")
    expect(card.get_by_role("button")).to_have_count(0)
    expect(page.get_by_text(re.compile("running…"))).to_have_count(0)


def test_a_denied_call_is_counted_as_denied_in_its_tag_and_the_totals(page: Page, api: Api) -> None:
    agent = careful_agent(api, "careful_deny", result="Tool said: {last_tool_result}")
    session_id, _ = start(api, agent, "")
    open_timeline(page, session_id)
    send(api, session_id, "what is 5 * 5")
    card = page.locator(".approval")
    card.get_by_label("Reason").fill("too risky")
    card.get_by_role("button", name="Deny").click()

    expect(page.locator("#session-status")).to_have_text("succeeded")
    tool = page.locator(".tool[data-tool=calculator]")
    expect(tool.locator(".state")).to_have_text("denied")
    expect(tool).not_to_have_class(re.compile(r"\bis-error\b"))
    expect(page.locator(".inv .totals")).to_contain_text("1 tool call · 1 denied")
    expect(page.locator("#totals")).to_contain_text("Tool calls1 · 1 denied")
    expect(page.locator(".ev.agent_message .text").last).to_contain_text(
        "because you declined the call. You said: too risky."
    )
    screenshot(page, "timeline-denied")


def test_a_denied_call_in_the_playground_tells_the_model_why(page: Page, api: Api) -> None:
    agent = api.agent(
        {
            "name": "careful_chat",
            "model": "scripted",
            "instruction": "Use the calculator.\nResult: Tool said: {last_tool_result}",
            "tools": [{"name": "calculator", "requires_approval": True}],
        }
    )
    page.goto(f"/playground/?agent={agent['id']}")
    expect(page.locator("body")).to_have_attribute("data-ready", "playground")
    page.fill("#message", "what is 9 * 9")
    page.keyboard.press("Enter")
    card = page.locator(".approval")
    expect(page.locator("#chat-waiting")).to_have_text("Waiting for your approval")
    card.get_by_label("Reason").fill("not today")
    card.get_by_role("button", name="Deny").click()
    expect(card).to_contain_text("Denied by demo: not today")
    answer = page.locator(".msg.agent .bubble").last
    expect(answer).to_have_text(
        "I did not run the calculator tool, because you declined the call. You said: not today. "
        "Tell me how you would like me to go on."
    )
    call = page.locator(".msg.tool[data-tool=calculator]")
    expect(call).to_have_attribute("data-outcome", "denied")
    expect(call.locator(".state")).to_have_text(" · denied")
    # The call's result comes after the card that decided it.
    assert call.evaluate(
        "el => el.querySelector('.approval').compareDocumentPosition("
        "el.querySelector('.result-line')) === Node.DOCUMENT_POSITION_FOLLOWING"
    )
    expect(page.locator("#send")).to_be_enabled()
    screenshot(page, "playground-denied")


def test_offline_mid_run_and_back_the_timeline_matches_the_database(
    context: BrowserContext, page: Page, api: Api, pages_server: DaphneServer
) -> None:
    api.model("drip", token_delay_s=0.03)
    steps = [
        {"name": f"step{n}", "model": "drip", "instruction": f"Reply: part {n} {WORDS[:60]}"}
        for n in range(6)
    ]
    agent = api.agent({"type": "sequential", "name": "relay", "sub_agents": steps})
    session_id, _ = start(api, agent, "")
    open_timeline(page, session_id)
    run = send(api, session_id, "go")
    expect(page.locator(".ev.agent_message[data-seq]").first).to_be_attached()

    context.set_offline(True)
    expect(page.locator("#conn")).to_have_attribute("data-state", "offline")
    offline_rows = len(timeline_rows(page))
    assert wait_for_run_end(api, run["id"])["status"] == "succeeded"
    assert len(timeline_rows(page)) == offline_rows  # nothing arrives while offline
    context.set_offline(False)

    expect(page.locator("#conn")).to_have_attribute("data-state", "live")
    expect(page.locator("#session-status")).to_have_text("succeeded")
    stored = api.events(session_id)
    expect(page.locator(f"[data-seq='{stored[-1]['seq']}']")).to_be_attached()
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]
    texts = page.eval_on_selector_all(
        ".ev.agent_message[data-seq]",
        "els => els.map(e => [Number(e.dataset.seq), e.querySelector('.text').textContent])",
    )
    assert texts == [
        [e["seq"], e["parts"][0]["text"]] for e in stored if e["type"] == "agent_message"
    ]
    expect(page.locator(".ev.provisional")).to_have_count(0)

    # The server goes away without the browser noticing a network change: the socket
    # closes, the page backs off and reconnects, and shows every event once.
    pages_server.restart()
    expect(page.locator("#conn")).to_have_attribute("data-state", "live", timeout=30_000)
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]


def test_the_socket_continues_after_the_events_the_page_came_with(page: Page, api: Api) -> None:
    api.model("quick")
    agent = api.agent({"name": "quick", "model": "quick", "instruction": "Reply: done"})
    session_id, _ = start(api, agent, "")
    assert wait_for_run_end(api, send(api, session_id, "first")["id"])["status"] == "succeeded"
    embedded = len(api.events(session_id))

    def store_more_before_the_script_runs(route: Any) -> None:
        # The page came with `embedded` events; more are stored before its script runs.
        response = route.fetch()
        second = send(api, session_id, "second")
        assert wait_for_run_end(api, second["id"])["status"] == "succeeded"
        route.fulfill(response=response)

    page.route("**/static/studio/js/timeline.js", store_more_before_the_script_runs, times=1)
    open_timeline(page, session_id)
    data = json.loads(page.locator("#timeline-data").text_content() or "{}")
    assert [e["seq"] for e in data["events"]] == list(range(1, embedded + 1))
    stored = api.events(session_id)
    assert len(stored) > embedded
    expect(page.locator(f"[data-seq='{stored[-1]['seq']}']")).to_be_attached()
    assert timeline_rows(page) == [(e["seq"], e["type"]) for e in stored]  # once each, no gap
    expect(page.locator("#totals")).to_contain_text(f"Events{len(stored)}")


def test_a_timeline_opens_on_its_newest_event_and_follows_it_on_a_laptop_and_a_phone(
    page: Page, api: Api
) -> None:
    # A short session: its side panels (totals, forks, state, artifacts, the dataset
    # form) are longer than its timeline, beside it on a laptop and below it on a phone.
    api.model("brief")
    agent = api.agent({"name": "brief", "model": "brief", "instruction": "Reply: done"})
    session_id, _ = start(api, agent, "")

    def answer(text: str) -> Locator:
        """The run's answer in the timeline, once the run has ended."""
        assert wait_for_run_end(api, send(api, session_id, text)["id"])["status"] == "succeeded"
        seq = [e["seq"] for e in api.events(session_id) if e["type"] == "agent_message"][-1]
        return page.locator(f".ev[data-seq='{seq}']")

    first = answer("first")
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 800})
        open_timeline(page, session_id)
        expect(first).to_be_in_viewport()
        expect(page.locator(".ev[data-seq='1']")).to_be_in_viewport()
    # On the phone, reading at the timeline's end: the next run's events are followed.
    expect(answer("second")).to_be_in_viewport()
    # Reading the panels below it instead: a new run does not pull the page away.
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    reading = page.evaluate("window.scrollY")
    expect(answer("third")).to_be_attached()
    expect(page.locator("#totals")).to_contain_text(f"Events{len(api.events(session_id))}")
    assert page.evaluate("window.scrollY") >= reading


SEED_10K = """
import uuid
from datetime import UTC, datetime, timedelta
from agents_core import events as ev
from studio.models import Agent, Event, Session
agent = Agent.objects.get(name="calculator", owner__username="demo")
session = Session.objects.create(owner=agent.owner, agent_version=agent.current_version,
                                 title="ten thousand events", status="succeeded")
start = datetime(2026, 1, 1, tzinfo=UTC)
rows = []
def add(kind, invocation, author, **fields):
    seq = len(rows) + 1
    event = ev.Event(type=kind, invocation_id=invocation, session_id=session.key, seq=seq,
                     author=author, branch=None if author == "user" else "calculator",
                     created_at=start + timedelta(milliseconds=seq), **fields)
    rows.append(Event.from_core(session, event))
for turn in range(1000):
    inv = uuid.uuid4().hex
    call = f"call_{turn}"
    add("user_message", inv, "user", parts=[ev.TextPart(text=f"question {turn}")])
    add("agent_start", inv, "calculator")
    add("agent_message", inv, "calculator",
        parts=[ev.ToolCallPart(call_id=call, name="calculator", args={"expression": "1 + 1"})])
    add("tool_response", inv, "calculator",
        parts=[ev.ToolResponsePart(call_id=call, name="calculator", result="2")])
    for n in range(5):
        add("agent_message", inv, "calculator", parts=[ev.TextPart(text=f"answer {turn}.{n}")])
    add("agent_end", inv, "calculator")
Event.objects.bulk_create(rows, batch_size=2000)
session.last_seq = len(rows)
session.save(update_fields=["last_seq"])
print(session.pk)
"""


def test_a_session_of_ten_thousand_events_opens_on_its_newest_page(
    page: Page, api: Api, pages_server: DaphneServer
) -> None:
    session_id = pages_server.manage("shell", "-c", SEED_10K).stdout.strip().splitlines()[-1]
    open_timeline(page, session_id)
    expect(page.locator("[data-seq='10000']")).to_be_attached()
    expect(page.locator(".ev[data-seq='9999']")).to_be_in_viewport()  # the last answer
    assert len(timeline_rows(page)) == 250  # one page, not ten thousand rows
    earlier = page.locator("#load-earlier")
    expect(earlier).to_have_text("Load earlier events (9750 more)")
    earlier.click()
    expect(earlier).to_have_text("Load earlier events (9500 more)")
    rows = timeline_rows(page)
    assert rows == [(e["seq"], e["type"]) for e in api.events(session_id)][9500:]
    last_tool = page.locator(".tool[data-tool=calculator] summary").last
    last_tool.click()
    expect(page.locator(".tool[data-tool=calculator]").last).to_have_attribute("open", "")
    assert page.evaluate("document.querySelectorAll('*').length") < 15_000
    seq = page.locator(".ev[data-seq] .seq").last
    seq.hover()  # times are written as tooltips on demand
    expect(seq).to_have_attribute("title", re.compile(r"\d{1,2}:\d{2}:\d{2}"))
    assert json.loads(page.locator("#timeline-data").text_content() or "{}")["page_size"] == 250
