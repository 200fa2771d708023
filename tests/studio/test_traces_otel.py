"""OpenTelemetry export: every ended run, inline or on a worker, reaches a real OTLP/HTTP
receiver (tests/support/otlp_receiver.py, decoding the protobuf with
opentelemetry-proto) as one trace whose span tree, names, GenAI attributes and timings
are the run's spans from the API; off by default; a collector that is down, refuses or
hangs neither fails nor holds up a run, and what it did not take is counted and logged.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core.spans import Span
from studio import conf, live, services
from studio.agents import specs
from studio.asgi import application
from studio.models import Agent, ModelConfig, Run, Session
from studio.runs import tasks
from studio.traces import genai, otel
from studio.traces.exporter import NoExport
from studio.traces.otlp import OtlpExport
from studio.traces.otlp import _facts as otlp_facts
from studio.traces.reads import run_spans
from tests.studio.conftest import client_for, make_session
from tests.support.live import (
    eventually,
    new_session,
    run_manager,  # noqa: F401  (an autouse fixture)
    script_model,
    scripted_agent,
    slow_agent,
    watch,
)
from tests.support.live import stored as stored_events
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan, otlp_receiver  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PLANNER_SCRIPT = [
    {"text": "asking", "tool_calls": [{"name": "researcher", "args": {"request": "6 * 7?"}}]},
    {"text": "the researcher says 42"},
]
RESEARCHER_SCRIPT = [
    {"text": "checking", "tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
    {"text": "42"},
]
TREE_NAMES = [
    "invoke_agent planner",
    "chat planner_model",
    "execute_tool researcher",
    "invoke_agent researcher",
    "chat researcher_model",
    "execute_tool calculator",
    "studio.approval",
    "chat researcher_model",
    "chat planner_model",
]
"""The trace of the planner's run below its root span, in the order its spans began."""

Start = Callable[..., OtlpExport]


@pytest.fixture
def start_export(
    settings: Any,
    monkeypatch: Any,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> Iterator[Start]:
    """Start the OTLP export to the receiver, configured as an operator would: the
    standard variables (``OTEL_BSP_SCHEDULE_DELAY`` short, so batches go at once)."""

    def start(*, capture: bool = False, **environ: str) -> OtlpExport:
        variables = {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": otlp_receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "20",
            **environ,
        }
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        settings.OTEL_TRACES_EXPORTER = conf.env_otel_traces_exporter()
        settings.OTEL_BSP_MAX_QUEUE_SIZE = conf.env_otel_queue_size()
        settings.STUDIO_OTEL_CAPTURE_CONTENT = capture
        export = otel.configure()
        assert isinstance(export, OtlpExport)
        return export

    yield start
    settings.OTEL_TRACES_EXPORTER = "none"
    otel.configure()


@sync_to_async
def planner_session(owner: User) -> Session:
    """An agent that asks another (called as a tool), whose calculator call waits for
    a person's approval; each agent on a scripted model of its own."""
    script_model(owner, "researcher_model", RESEARCHER_SCRIPT)
    researcher = {
        "name": "researcher",
        "model": "researcher_model",
        "instruction": "Follow the script.",
        "tools": [{"name": "calculator", "requires_approval": True}],
    }
    return make_session(
        owner, scripted_agent(owner, "planner", PLANNER_SCRIPT, agent_tools=[researcher])
    )


@sync_to_async
def api_spans(user: User, run: Run) -> list[dict[str, Any]]:
    response = client_for(user).get(f"/api/runs/{run.pk}/spans/")
    assert response.status_code == 200, response.content
    spans: list[dict[str, Any]] = response.json()["spans"]
    return spans


async def exported(receiver: OtlpReceiver, run: Run, count: int) -> list[ReceivedSpan]:
    async def arrived() -> list[ReceivedSpan]:
        got = receiver.trace(run.pk.hex)
        return got if len(got) >= count else []

    return await eventually(arrived)


async def taken(export: OtlpExport, count: int) -> None:
    """Wait until the exporter counted ``count`` spans taken by the collector (it
    counts once the collector answered)."""

    async def through() -> bool:
        return export.exported >= count

    await eventually(through)
    assert export.exported == count


def ns(at: str | datetime) -> int:
    return genai.nanoseconds(datetime.fromisoformat(at) if isinstance(at, str) else at)


def assert_trace_is_the_run(
    received: list[ReceivedSpan], run: Run, spans: list[dict[str, Any]]
) -> dict[str, ReceivedSpan]:
    """One trace, the run's id: a root span for the run over its whole life, then each
    of the run's spans under its parent, over its own start and end. The received
    spans by Studio span id."""
    assert len(received) == len(spans) + 1
    assert {span.trace_id for span in received} == {run.pk.hex}
    [root] = [span for span in received if span.parent_span_id is None]
    assert root.attributes["studio.run.id"] == str(run.pk)
    assert root.attributes["gen_ai.conversation.id"] == str(run.session_id)
    assert root.attributes["studio.run.status"] == run.status
    assert (root.start_ns, root.end_ns) == (ns(run.created_at), ns(run.ended_at or run.created_at))
    by_studio_id = {span.attributes.get("studio.span.id"): span for span in received}
    for span in spans:
        got = by_studio_id[span["span_id"]]
        parent = span["parent_span_id"]
        assert got.parent_span_id == (by_studio_id[parent].span_id if parent else root.span_id)
        assert (got.start_ns, got.end_ns) == (ns(span["start"]), ns(span["end"]))
        assert root.start_ns <= got.start_ns <= got.end_ns <= root.end_ns
        assert got.status == (
            "STATUS_CODE_ERROR" if span["status"] == "error" else "STATUS_CODE_UNSET"
        )
    return by_studio_id


def assert_gen_ai_attributes(
    by_studio_id: dict[str, ReceivedSpan], spans: list[dict[str, Any]]
) -> None:
    for span in spans:
        got = by_studio_id[span["span_id"]].attributes
        match span["kind"]:
            case "agent":
                assert got["gen_ai.operation.name"] == "invoke_agent"
                assert got["gen_ai.agent.name"] == span["name"]
            case "model":
                assert got["gen_ai.operation.name"] == "chat"
                assert got["gen_ai.provider.name"] == "studio.scripted"
                assert got["gen_ai.request.model"] == f"{span['author']}_model"
                assert got["gen_ai.usage.input_tokens"] == span["input_tokens"] > 0
                assert got["gen_ai.usage.output_tokens"] == span["output_tokens"]
            case "tool":
                assert got["gen_ai.operation.name"] == "execute_tool"
                assert got["gen_ai.tool.name"] == span["name"]
                assert got["gen_ai.tool.call.id"] == span["attributes"]["call_id"]
            case "human":
                assert got["studio.approval.decision"] == "approve"


async def decide(session: Session, approval: dict[str, Any], **decision: str) -> None:
    body = live.ApprovalBody(
        call_id=approval["call_id"],
        args_hash=approval["args_hash"],
        **{"decision": "approve", **decision},
    )
    owner = await User.objects.aget(pk=session.owner_id)
    await services.decide_approval(session, body, user=owner, via="api")


async def test_an_inline_run_is_exported_as_one_trace_of_its_spans(
    ada: User,
    start_export: Start,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> None:
    export = start_export()
    session = await planner_session(ada)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 6 * 7?"})
    await viewer.until(lambda v: bool(v.events_of_type("approval_request")))
    await decide(session, viewer.events_of_type("approval_request")[0]["approval"])
    await viewer.until_ended()
    run = await Run.objects.aget(session=session)
    spans = await api_spans(ada, run)

    received = await exported(otlp_receiver, run, len(spans) + 1)
    by_studio_id = assert_trace_is_the_run(received, run, spans)
    assert [by_studio_id[span["span_id"]].name for span in spans] == TREE_NAMES
    assert_gen_ai_attributes(by_studio_id, spans)
    [root] = [span for span in received if span.parent_span_id is None]
    assert root.name == "invoke_agent planner"
    assert root.attributes["gen_ai.agent.name"] == "planner"
    assert root.resource["service.name"] == "studio"
    assert {span.scope for span in received} == {"studio"}
    # What agents and people wrote stays home unless content capture is on.
    written = {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.output.messages"}
    assert not any(written & span.attributes.keys() for span in received)
    # Exporting the run again makes the same trace: its ids are derived from Studio's.
    again = genai.trace_of(
        genai.RunFacts.of(run, agent="planner", models={}),
        await sync_to_async(run_spans)(run),
        capture_content=False,
    )
    assert {f"{span.span_id:016x}" for span in again} == {span.span_id for span in received}
    await taken(export, len(received))
    assert export.dropped == 0


async def test_what_failed_is_an_error_span_that_says_so_without_what_was_written(
    ada: User,
    start_export: Start,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> None:
    start_export()
    tools = [{"name": "calculator", "requires_approval": True}]
    await sync_to_async(scripted_agent)(ada, "careful", RESEARCHER_SCRIPT, tools=tools)
    session = await new_session(ada, "careful")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "what is 6 * 7?"})
    await viewer.until(lambda v: bool(v.events_of_type("approval_request")))
    approval = viewer.events_of_type("approval_request")[0]["approval"]
    await decide(session, approval, decision="deny", reason="the secret plan says no")
    await viewer.until_ended()
    denied = await Run.objects.aget(session=session)
    spans = await api_spans(ada, denied)
    received = await exported(otlp_receiver, denied, len(spans) + 1)
    assert_trace_is_the_run(received, denied, spans)
    [tool] = [span for span in spans if span["name"] == "calculator"]
    [call] = [span for span in received if span.name == "execute_tool calculator"]
    outcome = tool["attributes"]["outcome"]
    assert (call.status, call.status_message) == ("STATUS_CODE_ERROR", outcome)
    assert call.attributes["error.type"] == outcome != "done"
    assert "secret plan" not in repr(received)

    # A run that did not succeed: its root span is an error saying how it ended.
    await sync_to_async(slow_agent)(ada)
    session = await new_session(ada, "slow")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until(lambda v: bool(v.partials))
    await viewer.send({"type": "cancel"})
    await viewer.until_ended()
    cancelled = await Run.objects.aget(session=session)
    spans = await api_spans(ada, cancelled)
    received = await exported(otlp_receiver, cancelled, len(spans) + 1)
    assert_trace_is_the_run(received, cancelled, spans)
    [root] = [span for span in received if span.parent_span_id is None]
    assert (root.status, root.status_message) == (
        "STATUS_CODE_ERROR",
        "cancelled: cancelled by request",
    )
    assert root.attributes["error.type"] == "cancelled"


async def test_a_worker_run_is_exported_with_content_when_asked(
    ada: User,
    start_export: Start,
    otlp_receiver: OtlpReceiver,  # noqa: F811
    worker_execution: None,
) -> None:
    start_export(capture=True, OTEL_SERVICE_NAME="studio-worker")
    session = await planner_session(ada)
    run = await sync_to_async(services.start_run)(session, "what is 6 * 7?")
    executing = asyncio.create_task(tasks.execute(run.pk))

    async def requested() -> list[dict[str, Any]]:
        return [e for e in await stored_events(session) if e["type"] == "approval_request"]

    await decide(session, (await eventually(requested))[0]["approval"])
    await asyncio.wait_for(executing, timeout=10)
    run = await Run.objects.aget(pk=run.pk)
    assert run.status == "succeeded"
    spans = await api_spans(ada, run)

    received = await exported(otlp_receiver, run, len(spans) + 1)
    by_studio_id = assert_trace_is_the_run(received, run, spans)
    assert [by_studio_id[span["span_id"]].name for span in spans] == TREE_NAMES
    assert_gen_ai_attributes(by_studio_id, spans)
    assert {span.resource["service.name"] for span in received} == {"studio-worker"}
    [calculator] = [span for span in received if span.name == "execute_tool calculator"]
    assert calculator.attributes["gen_ai.tool.call.arguments"] == '{"expression": "6 * 7"}'
    assert calculator.attributes["gen_ai.tool.call.result"] == "42"
    answers = [span for span in received if span.name == "chat planner_model"]
    assert "the researcher says 42" in answers[-1].attributes["gen_ai.output.messages"]


async def test_export_is_off_by_default_and_sends_nothing(
    ada: User,
    monkeypatch: Any,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp_receiver.url)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    assert conf.env_otel_traces_exporter() == "none"
    assert isinstance(otel.configure(), NoExport)
    await sync_to_async(scripted_agent)(ada, "plain", [{"text": "hi"}])
    session = await new_session(ada, "plain")
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "hello"})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    otel.shutdown()
    assert otlp_receiver.requests == 0


async def plain_run(ada: User, name: str = "plain") -> Run:
    """A run of an agent that answers at once (an agent and a model span), watched to
    its end: the final status a viewer gets."""
    if not await Agent.objects.filter(owner=ada, name=name).aexists():
        await sync_to_async(scripted_agent)(ada, name, [{"text": "hi"}])
    session = await new_session(ada, name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "hello"})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    return await Run.objects.aget(session=session)


def warnings_of(caplog: Any) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "studio.traces" and r.levelno == logging.WARNING
    ]


async def warned(caplog: Any) -> list[str]:
    """The export's warnings once there is one: the exporter's thread counts a drop
    before it logs it, so the count alone does not say the line is written."""

    async def logged() -> list[str]:
        return warnings_of(caplog)

    return await eventually(logged)


async def test_a_hung_collector_holds_up_no_run_and_the_overflow_is_dropped(
    ada: User,
    start_export: Start,
    otlp_receiver: OtlpReceiver,  # noqa: F811
    caplog: Any,
) -> None:
    export = start_export(OTEL_BSP_MAX_QUEUE_SIZE="4", OTEL_BSP_MAX_EXPORT_BATCH_SIZE="4")
    otlp_receiver.hold()
    first = await plain_run(ada)  # three spans: the run, its agent, its model call

    async def held() -> bool:
        return otlp_receiver.holding > 0

    await eventually(held)
    # The collector holds the first run's batch: the next run still ends, and its
    # viewers get its final status, while that request is unanswered.
    second = await plain_run(ada)
    assert otlp_receiver.holding == 1 and otlp_receiver.spans == []
    # Three spans wait or are in flight, the queue holds four: two of the second
    # run's three are dropped, and said so in one line.

    async def dropped() -> int:
        return export.dropped

    assert await eventually(dropped) == 2
    assert await warned(caplog) == [
        f"OpenTelemetry export: queue full (OTEL_BSP_MAX_QUEUE_SIZE); 2 of the 3 spans of "
        f"run {second.pk} dropped, 2 dropped in all"
    ]
    otlp_receiver.release()
    await exported(otlp_receiver, first, 3)
    await exported(otlp_receiver, second, 1)
    await taken(export, 4)
    assert export.dropped == 2


async def test_a_collector_that_is_down_or_refuses_fails_no_run_and_drops_are_logged(
    ada: User,
    start_export: Start,
    otlp_receiver: OtlpReceiver,  # noqa: F811
    caplog: Any,
) -> None:
    closed = OtlpReceiver()
    closed.close()  # nothing listens on its port any more
    export = start_export(OTEL_EXPORTER_OTLP_ENDPOINT=closed.url, OTEL_EXPORTER_OTLP_TIMEOUT="1")
    run = await plain_run(ada)
    assert run.status == "succeeded"

    async def dropped() -> int:
        return export.dropped

    assert await eventually(dropped) == 3
    assert await warned(caplog) == [
        "OpenTelemetry export: the collector did not take 3 spans; 3 dropped in all"
    ]

    caplog.clear()
    otlp_receiver.refuse()
    export = start_export()
    await plain_run(ada)
    assert await eventually(dropped) == 3
    assert otlp_receiver.requests == 1 and otlp_receiver.spans == []
    assert await warned(caplog) == [
        "OpenTelemetry export: the collector did not take 3 spans; 3 dropped in all"
    ]


async def test_stopping_flushes_what_waits_within_a_bound(
    ada: User,
    start_export: Start,
    otlp_receiver: OtlpReceiver,  # noqa: F811
    caplog: Any,
) -> None:
    # Batches would wait a minute: stopping sends them now.
    export = start_export(OTEL_BSP_SCHEDULE_DELAY="60000")
    run = await plain_run(ada)
    await asyncio.to_thread(export.shutdown)
    assert len(otlp_receiver.trace(run.pk.hex)) == 3
    # A collector that never answers delays stopping by the bound only; what it kept
    # is said to be lost.
    otlp_receiver.hold()
    export = start_export()
    run = await plain_run(ada)

    async def held() -> bool:
        return otlp_receiver.holding > 0

    await eventually(held)
    await asyncio.to_thread(export.shutdown, 0.2)
    assert otlp_receiver.holding == 1
    assert warnings_of(caplog) == [
        "OpenTelemetry export: stopped after 0.2s with 3 spans not exported"
    ]


def test_each_agent_calls_its_model_config_s_model_references_included(ada: User) -> None:
    ModelConfig.objects.create(
        owner=ada, name="fast", provider="openai_compatible", model="gpt-4o-mini"
    )
    script_model(ada, "offline", [{"text": "hi"}])
    services.create_agent(ada, name="helper", spec={"name": "helper", "model": "offline"})
    root = services.create_agent(
        ada,
        name="boss",
        spec={
            "type": "sequential",
            "name": "boss",
            "sub_agents": [{"name": "writer", "model": "fast"}, {"ref": "helper"}],
        },
    )
    assert root.current_version is not None
    assert specs.agent_models(root.current_version) == {
        "writer": "gpt-4o-mini",
        "helper": "offline",
    }


def test_a_summary_span_names_the_summarisers_model_not_its_agents(ada: User) -> None:
    """A compaction summary is a call to the summariser's model config, which may be
    another model from another provider than the agent's own."""
    ModelConfig.objects.create(owner=ada, name="big", provider="openai_compatible", model="gpt-4o")
    ModelConfig.objects.create(
        owner=ada,
        name="cheap",
        provider="openai_compatible",
        model="claude-3-5-haiku",
        base_url="https://api.anthropic.com/v1/",
    )
    agent = services.create_agent(
        ada,
        name="chatty",
        spec={"name": "chatty", "model": "big", "compaction": {"model": "cheap"}},
    )
    run = Run.objects.create(session=make_session(ada, agent), message="hi")
    facts = otlp_facts(Run.objects.select_related("session__agent_version__agent").get(pk=run.pk))
    started = datetime.now(tz=UTC)

    def call(span_id: str, name: str) -> Span:
        return Span(
            span_id=span_id,
            parent_span_id=None,
            kind="model",
            name=name,
            author="chatty",
            branch="chatty",
            invocation_id="i",
            start=started,
            end=started,
            status="ok",
        )

    answer, summary = genai.trace_of(
        facts, [call("a1", "model"), call("a2", "summary")], capture_content=False
    )[1:]
    assert answer.name == "chat gpt-4o"
    assert answer.attributes["gen_ai.provider.name"] == "openai"
    assert summary.name == "chat claude-3-5-haiku"
    assert summary.attributes["gen_ai.request.model"] == "claude-3-5-haiku"
    assert summary.attributes["gen_ai.provider.name"] == "anthropic"


def one_agents_facts(agent: str, at: datetime) -> genai.RunFacts:
    """A succeeded run of ``agent`` on gpt-4o (OpenAI), for spans exported alone."""
    return genai.RunFacts(
        run_id=uuid.uuid4(), session_id=uuid.uuid4(), agent=agent, status="succeeded",
        error_code="", error_message="", created_at=at, ended_at=at, input_tokens=1_304,
        output_tokens=96, models={agent: "gpt-4o"}, providers={agent: "openai"},
    )  # fmt: skip


def model_span(span_id: str, agent: str, at: datetime, **fields: Any) -> Span:
    """A model call of ``agent`` at ``at``, with ``fields`` (tokens, attributes)."""
    return Span(
        span_id=span_id, parent_span_id=None, kind="model", name="model", author=agent,
        branch=agent, invocation_id="i", start=at, end=at, status="ok", **fields,
    )  # fmt: skip


def test_a_calls_prompt_cache_reads_are_exported_as_the_conventions_name_them() -> None:
    """What the provider served from its prompt cache goes out as
    ``gen_ai.usage.cache_read.input_tokens`` (part of the input tokens, as the
    conventions say), so the collector, or another Studio ingesting the trace, prices
    it at the cached price; a call with none cached sends no such attribute."""
    at = datetime.now(tz=UTC)

    def call(span_id: str, cached: int) -> Span:
        tokens = {"input_tokens": 1_204 if cached else 100, "output_tokens": 88}
        return model_span(span_id, "cacher", at, cached_input_tokens=cached, **tokens)

    facts = one_agents_facts("cacher", at)
    hit, miss = genai.trace_of(facts, [call("a1", 1_000), call("a2", 0)], capture_content=False)[1:]
    assert hit.attributes["gen_ai.usage.input_tokens"] == 1_204
    assert hit.attributes["gen_ai.usage.cache_read.input_tokens"] == 1_000
    assert "gen_ai.usage.cache_read.input_tokens" not in miss.attributes


def test_a_retried_calls_attempts_are_exported() -> None:
    """A call tried more than once (``model_retry`` events on its span) says how many
    times in ``studio.model.attempts``; a call answered at once sends no such attribute."""
    at = datetime.now(tz=UTC)
    retried = model_span("a1", "patient", at, attributes={"attempts": 3})
    at_once = model_span("a2", "patient", at)
    facts = one_agents_facts("patient", at)
    exported = genai.trace_of(facts, [retried, at_once], capture_content=False)[1:]
    assert exported[0].attributes["studio.model.attempts"] == 3
    assert "studio.model.attempts" not in exported[1].attributes
