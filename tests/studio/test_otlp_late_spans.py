"""Spans of an ingested trace that arrive in later requests than the spans they go with:
an exporter sends spans in batches as they end, so a tool that runs past a batch goes in
the next one, and another service's exporter sends its spans of the same trace on its own
schedule, after the run has ended, too. Each is part of the run as if all had come at
once: one call, answered once; drawn in the waterfall, counted in its wall time, tokens
and daily roll-ups; the run ended once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from agents_core.spans import spans_of
from studio.models import Event, IngestedTrace, ModelDay, Run, Session
from tests.studio.conftest import client_for
from tests.studio.test_otlp_ingest import post, token_for
from tests.support.otlp_spans import SpanSpec, agent_trace, new_trace_id, request_of, start_of

# Committed, not in a test's transaction: see test_otlp_ingest.
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_tool_and_a_model_call_sent_after_the_root_join_the_ended_run(ada: User) -> None:
    root, first, tool, second = agent_trace(new_trace_id())
    token = token_for(ada)
    post(request_of(root, first).SerializeToString(), token)
    run = Run.objects.get(pk=IngestedTrace.objects.get(owner=ada).run_id)
    assert run.status == "succeeded"  # ended with its root
    assert run.timing["tools_ms"] == 0.0
    ends = Event.objects.filter(session_id=run.session_id, type="run_end").count()

    answer = post(request_of(tool, second).SerializeToString(), token)  # the other service's

    assert answer.status_code == 200, answer.content
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert Event.objects.filter(session_id=run.session_id, type="run_end").count() == ends
    # The model asked for the tool call; the other service's span answers it.
    assert [call[1:] for call in calls_of(run.session)] == [("call_1", None)]
    # Its wall time split as if every span had come at once.
    assert run.timing == {
        "total_ms": 3000.0,
        "queued_ms": 0.0,
        "model_ms": 2200.0,
        "tools_ms": 400.0,
        "human_ms": 0.0,
        "overhead_ms": 400.0,
    }
    # The waterfall draws them (an ended run's spans are read from what was kept).
    spans = client_for(ada).get(f"/api/runs/{run.pk}/spans/").json()["spans"]
    assert sorted((s["kind"], s["name"]) for s in spans) == [
        ("agent", "shopper"),
        ("model", "model"),
        ("model", "model"),
        ("tool", "price_of"),
    ]
    # The late call is counted where the overview and the costs API read it.
    calls = Event.objects.filter(run=run, type="agent_message").exclude(payload__span_id=None)
    assert sorted(calls.values_list("model", flat=True)) == ["gpt-test", "gpt-test"]
    day = ModelDay.objects.get(owner=ada)
    assert (day.calls, day.input_tokens, day.output_tokens) == (
        2,
        run.input_tokens,
        run.output_tokens,
    )
    assert (run.input_tokens, run.output_tokens) == (32, 13)


def calls_of(session: Session) -> list[tuple[int, str, str | None]]:
    """Each tool call the session's messages carry: seq, call id, tool span id."""
    return [
        (row.seq, part["call_id"], part.get("span_id"))
        for row in Event.objects.filter(session=session, type="agent_message").order_by("seq")
        for part in row.payload["parts"]
        if part["kind"] == "tool_call"
    ]


def tool_span(session: Session) -> dict[str, object]:
    wires = [row.payload for row in Event.objects.filter(session=session).order_by("seq")]
    (tool,) = [s for s in spans_of(wires) if s.kind == "tool"]
    return {
        "name": tool.name,
        "parent": tool.parent_span_id,
        "start": tool.start,
        "ms": tool.duration_ms,
        "call_id": tool.attributes.get("call_id"),
        "arguments": tool.attributes.get("arguments"),
        "result": tool.attributes.get("result"),
    }


def price_of_span(root: SpanSpec, tool: SpanSpec, arguments: object) -> dict[str, object]:
    """What ``tool_span`` reads of ``agent_trace``'s price_of call: its OpenTelemetry
    times, under the root, answered."""
    return {
        "name": "price_of",
        "parent": root.span_id,
        "start": start_of(tool),
        "ms": 400.0,
        "call_id": "call_1",
        "arguments": arguments,
        "result": "0.5 EUR",
    }


def test_a_model_call_and_its_tool_in_one_request_read_as_studios_own(ada: User) -> None:
    """The model's message carries the call it made, with the span of the tool that
    answered it, as a Studio run's does: one message a model call (its tokens and the
    call), not an empty reply beside a message of the tool's own. The tool's span keeps
    its OpenTelemetry times."""
    root, first, tool, second = agent_trace(new_trace_id())
    post(request_of(root, first, tool, second).SerializeToString(), token_for(ada))
    session = IngestedTrace.objects.get(owner=ada).session
    messages = Event.objects.filter(session=session, type="agent_message").order_by("seq")
    assert [(m.payload["span_id"], [p["kind"] for p in m.payload["parts"]]) for m in messages] == [
        (first.span_id, ["tool_call"]),
        (second.span_id, ["text"]),
    ]
    assert [call[1:] for call in calls_of(session)] == [("call_1", tool.span_id)]
    assert tool_span(session) == price_of_span(root, tool, arguments={"item": "apple"})
    assert Run.objects.get(session=session).timing["tools_ms"] == 400.0


def test_a_tool_span_in_the_batch_after_its_models_answers_the_call_the_model_made(
    ada: User,
) -> None:
    root, first, tool, second = agent_trace(new_trace_id())
    token = token_for(ada)
    post(request_of(first).SerializeToString(), token)  # the model asked for price_of
    session = IngestedTrace.objects.get(owner=ada).session
    assert [call[1:] for call in calls_of(session)] == [("call_1", None)]
    post(request_of(tool).SerializeToString(), token)  # the tool ran past the batch
    post(request_of(second, root).SerializeToString(), token)
    # Asked once, by the model; the tool's span answers it.
    assert [call[1:] for call in calls_of(session)] == [("call_1", None)]
    responses = Event.objects.filter(session=session, type="tool_response")
    assert [r.payload["parts"][0]["call_id"] for r in responses] == ["call_1"]
    # The late response's span: with the arguments the model asked it with.
    assert tool_span(session) == price_of_span(root, tool, arguments={"item": "apple"})
    assert Run.objects.get(session=session).timing["tools_ms"] == 400.0


def test_a_model_span_sent_after_its_tools_leaves_the_call_to_the_tool_span(ada: User) -> None:
    root, first, tool, second = agent_trace(new_trace_id())
    token = token_for(ada)
    post(request_of(tool).SerializeToString(), token)
    post(request_of(first, second, root).SerializeToString(), token)
    session = IngestedTrace.objects.get(owner=ada).session
    # The tool's span carries the call (with its span); the model's message does not.
    assert [call[1:] for call in calls_of(session)] == [("call_1", tool.span_id)]
    assert tool_span(session)["ms"] == 400.0
