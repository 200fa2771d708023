"""Spans of an ingested trace that arrive after its root: another service's exporter
sends its spans of the same trace on its own schedule, so a tool or model call can come
in after the run has ended. It is part of the run as if it had come first: drawn in its
waterfall, counted in its wall time, tokens and daily roll-ups, the run ended once."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from studio.models import Event, IngestedTrace, ModelDay, Run
from tests.studio.conftest import client_for
from tests.studio.test_otlp_ingest import post, token_for
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of

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
