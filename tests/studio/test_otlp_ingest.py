"""OTLP trace ingest (``POST /v1/traces``, ``studio.services.ingest``): spans of agents
built elsewhere become sessions and runs of the token's owner, drawn like Studio's own;
refusals answered as the OTLP specification says, with nothing stored half-way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agents_core.spans import spans_of
from studio.models import (
    Event,
    IngestedTrace,
    IngestToken,
    ModelDay,
    Run,
    Session,
)
from studio.services import tokens
from tests.support.otlp_spans import (
    SpanSpec,
    agent_trace,
    json_body,
    new_trace_id,
    request_of,
    start_of,
)

# Committed, not in a test's transaction: the view's ORM work runs through
# ``database_sync_to_async``, which closes the connection a test's transaction holds on
# PostgreSQL (these tests run there too, ``PG_TESTS``).
pytestmark = pytest.mark.django_db(transaction=True)

PROTOBUF = "application/x-protobuf"
URL = "/v1/traces"


def token_for(user: User, name: str = "exporter") -> str:
    return tokens.create_token(IngestToken, user, name)[1]


def post(body: bytes, token: str | None, *, content_type: str = PROTOBUF, **headers: str) -> Any:
    if token is not None:
        headers.setdefault("authorization", f"Bearer {token}")
    return Client().post(URL, body, content_type=content_type, headers=headers)


def wires_of(session: Session) -> list[dict[str, Any]]:
    return [e.payload for e in Event.objects.filter(session=session).order_by("seq")]


def response_of(answer: Any) -> ExportTraceServiceResponse:
    parsed = ExportTraceServiceResponse()
    parsed.ParseFromString(answer.content)
    return parsed


def test_a_protobuf_trace_becomes_one_finished_run_drawn_as_agent_model_and_tool_spans(
    ada: User,
) -> None:
    trace_id = new_trace_id()
    answer = post(request_of(*agent_trace(trace_id)).SerializeToString(), token_for(ada))
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == PROTOBUF
    assert not response_of(answer).HasField("partial_success")
    trace = IngestedTrace.objects.get(owner=ada, trace_id=trace_id)
    assert trace.agent.name == "shopper" and trace.session.owner == ada
    assert trace.session.agent_version is None  # read-only: nothing Studio could run
    run = Run.objects.get(pk=trace.run_id)
    assert (run.status, run.input_tokens, run.output_tokens) == ("succeeded", 32, 13)
    assert run.message == "What does an apple cost?"
    # Titled as Studio titles its own sessions: by what the user asked.
    assert trace.session.title == "What does an apple cost?"
    spans = {s.span_id: s for s in spans_of(wires_of(trace.session))}
    kinds = sorted((s.kind, s.name) for s in spans.values())
    assert kinds == [
        ("agent", "shopper"),
        ("model", "model"),
        ("model", "model"),
        ("tool", "price_of"),
    ]
    root = next(s for s in spans.values() if s.kind == "agent")
    assert all(s.parent_span_id == root.span_id for s in spans.values() if s is not root)
    assert all(s.end is not None and s.status == "ok" for s in spans.values())
    tool = next(s for s in spans.values() if s.kind == "tool")
    assert tool.attributes["arguments"] == {"item": "apple"}
    assert tool.attributes["result"] == "0.5 EUR"
    answers = [s.attributes["text"] for s in spans.values() if s.kind == "model"]
    assert "An apple costs 0.5 EUR." in answers
    assert wires_of(trace.session)[0]["type"] == "user_message"


def sent_later(specs: list[SpanSpec], *, seconds: float = 10.0) -> list[SpanSpec]:
    """The spans as an exporter sends them: after they ended, ``seconds`` later."""
    for spec in specs:
        spec.start_s -= seconds
        spec.end_s -= seconds
    return specs


def test_an_ingested_runs_wall_time_is_its_traces_split_as_studios_own(ada: User) -> None:
    """The run lasts from its first span's start to its root's end, however late the
    spans were sent; its tool call is tool time (its span is the tool's latency), not
    runner overhead, and nothing of it was queued."""
    trace_id = new_trace_id()
    post(request_of(*sent_later(agent_trace(trace_id))).SerializeToString(), token_for(ada))
    trace = IngestedTrace.objects.get(owner=ada, trace_id=trace_id)
    response = next(w for w in wires_of(trace.session) if w["type"] == "tool_response")
    assert response["latency_ms"] == 400.0  # execute_tool ran from 1.1 s to 1.5 s
    run = Run.objects.get(pk=trace.run_id)
    assert run.created_at == run.started_at
    assert run.timing == {
        "total_ms": 3000.0,  # the root span: 0 s to 3 s
        "queued_ms": 0.0,
        "model_ms": 2200.0,  # two chat spans, 0.9 s and 1.3 s
        "tools_ms": 400.0,
        "human_ms": 0.0,
        "overhead_ms": 400.0,
    }


def test_an_ingested_runs_model_calls_are_counted_under_the_model_its_spans_name(
    ada: User,
) -> None:
    """The overview's "By model" and ``/api/costs/?group_by=model`` read the calls'
    model: the trace's (``gen_ai.request.model``), not "unknown model"."""
    trace_id = new_trace_id()
    post(request_of(*agent_trace(trace_id)).SerializeToString(), token_for(ada))
    run = Run.objects.get(pk=IngestedTrace.objects.get(owner=ada, trace_id=trace_id).run_id)
    calls = Event.objects.filter(run=run, type="agent_message").exclude(payload__span_id=None)
    assert sorted(calls.values_list("model", flat=True)) == ["gpt-test", "gpt-test"]
    day = ModelDay.objects.get(owner=ada)
    assert (day.model, day.calls, day.unknown) == ("gpt-test", 2, 2)  # no price: unknown


def test_a_trace_with_no_users_words_is_titled_after_its_agent_named_by_its_root(
    ada: User,
) -> None:
    root, _, tool, _ = agent_trace(new_trace_id())
    token = token_for(ada)
    post(request_of(tool).SerializeToString(), token)  # the service's name only, so far
    session = IngestedTrace.objects.get(owner=ada).session
    assert session.title == "shop-agent · execute_tool price_of"
    post(request_of(root).SerializeToString(), token)
    session.refresh_from_db()
    assert session.title == "shopper · invoke_agent shopper"


def test_a_root_sent_after_its_children_moves_the_runs_start_back_to_its_own(
    ada: User,
) -> None:
    root, *children = sent_later(agent_trace(new_trace_id()))
    token = token_for(ada)
    post(request_of(*children).SerializeToString(), token)
    post(request_of(root).SerializeToString(), token)
    run = Run.objects.get(pk=IngestedTrace.objects.get(owner=ada).run_id)
    assert run.started_at == run.created_at == start_of(root)
    assert run.timing["total_ms"] == 3000.0 and run.timing["queued_ms"] == 0.0


def test_otlp_json_as_exporters_write_it_hex_ids_and_string_integers(ada: User) -> None:
    trace_id, root_id, chat_id = new_trace_id(), "1111111111111111", "2222222222222222"
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "js-agent"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "handwritten"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": chat_id,
                                "parentSpanId": root_id,
                                "name": "chat m",
                                "kind": 3,
                                "startTimeUnixNano": "1767225600000000000",
                                "endTimeUnixNano": "1767225601500000000",
                                "attributes": [
                                    {
                                        "key": "gen_ai.operation.name",
                                        "value": {"stringValue": "chat"},
                                    },
                                    {
                                        "key": "gen_ai.usage.input_tokens",
                                        "value": {"intValue": "7"},
                                    },
                                    {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 3}},
                                ],
                                "status": {},
                                "unknownFieldFromTheFuture": True,
                            }
                        ],
                    }
                ],
            }
        ]
    }
    answer = post(json.dumps(body).encode(), token_for(ada), content_type="application/json")
    assert answer.status_code == 200, answer.content
    assert answer["Content-Type"] == "application/json"
    assert json.loads(answer.content) == {}
    trace = IngestedTrace.objects.get(owner=ada, trace_id=trace_id)
    placeholder, model = spans_of(wires_of(trace.session))  # its parent: not come yet
    assert (placeholder.span_id, placeholder.kind, placeholder.end) == (root_id, "agent", None)
    assert (model.kind, model.input_tokens, model.output_tokens) == ("model", 7, 3)
    assert model.parent_span_id == root_id
    assert model.duration_ms == pytest.approx(1500)
    assert Run.objects.get(pk=trace.run_id).status == "running"  # its root has not come


def test_the_json_encoding_of_the_same_spans_stores_the_same_run(ada: User) -> None:
    trace_id = new_trace_id()
    answer = post(
        json_body(request_of(*agent_trace(trace_id))),
        token_for(ada),
        content_type="application/json; charset=utf-8",
    )
    assert answer.status_code == 200, answer.content
    run = IngestedTrace.objects.get(trace_id=trace_id).run
    assert (run.status, run.input_tokens, run.output_tokens) == ("succeeded", 32, 13)


def test_a_request_that_fails_while_storing_stores_none_of_its_traces(
    ada: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.ingest import events as ingest_events

    real = ingest_events.events_of
    calls = {"n": 0}

    def second_trace_fails(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(ingest_events, "events_of", second_trace_fails)
    body = request_of(
        *agent_trace(new_trace_id()), *agent_trace(new_trace_id())
    ).SerializeToString()
    with pytest.raises(RuntimeError):
        post(body, token_for(ada))
    assert not Session.objects.exists() and not IngestedTrace.objects.exists()


def test_the_same_trace_id_from_another_user_makes_their_own_run(ada: User, bob: User) -> None:
    trace_id = new_trace_id()
    specs = agent_trace(trace_id)
    assert post(request_of(*specs[1:3]).SerializeToString(), token_for(ada)).status_code == 200
    assert post(request_of(*specs[3:]).SerializeToString(), token_for(bob)).status_code == 200
    mine, theirs = (IngestedTrace.objects.get(trace_id=trace_id, owner=u) for u in (ada, bob))
    assert mine.session_id != theirs.session_id and mine.run_id != theirs.run_id
    assert mine.session.owner == ada and theirs.session.owner == bob
    mine_spans = {s.span_id for s in spans_of(wires_of(mine.session))}
    theirs_spans = {s.span_id for s in spans_of(wires_of(theirs.session))}
    # Each: its own spans under an agent span standing for the root, none of the other's.
    assert mine_spans == {specs[0].span_id, specs[1].span_id, specs[2].span_id}
    assert theirs_spans == {specs[0].span_id, specs[3].span_id}
    browser = Client()
    browser.force_login(bob)
    assert browser.get(f"/sessions/{mine.session_id}/").status_code == 404
    assert browser.get(f"/api/sessions/{mine.session_id}/events/").status_code == 404


def test_spans_in_later_requests_append_to_the_run_which_ends_with_its_root(ada: User) -> None:
    token, trace_id = token_for(ada), new_trace_id()
    root, first, tool, second = agent_trace(trace_id)
    for batch in ([first], [tool, first], [second]):  # `first` twice: stored once
        assert post(request_of(*batch).SerializeToString(), token).status_code == 200
    trace = IngestedTrace.objects.get(trace_id=trace_id)
    assert Run.objects.get(pk=trace.run_id).status == "running"
    # The root has not come: an open agent span stands for it, over its children.
    early = spans_of(wires_of(trace.session))
    assert len(early) == 4
    placeholder = next(s for s in early if s.kind == "agent")
    assert (placeholder.span_id, placeholder.end, placeholder.name) == (
        root.span_id,
        None,
        "shop-agent",  # the service's name, until the root names its agent
    )
    assert all(s.parent_span_id == root.span_id for s in early if s is not placeholder)
    root.error = "the customer left"
    assert post(request_of(root).SerializeToString(), token).status_code == 200
    run = Run.objects.get(pk=trace.run_id)
    assert (run.status, run.error_code) == ("failed", "external_error")
    assert "the customer left" in run.error_message
    spans = spans_of(wires_of(trace.session))
    assert len(spans) == 4 and Session.objects.count() == 1
    agent = next(s for s in spans if s.kind == "agent")
    assert (agent.name, agent.status) == ("shopper", "error")
    assert agent.start == min(s.start for s in spans)  # the root's own start
    assert agent.attributes["otel"]["name"] == "invoke_agent shopper"
    assert [w["type"] for w in wires_of(trace.session)].count("agent_start") == 1
    assert run.input_tokens == 32  # the repeated span was counted once


def test_spans_with_bad_ids_or_times_are_rejected_and_the_rest_stored(ada: User) -> None:
    trace_id = new_trace_id()
    specs = agent_trace(trace_id)
    request = request_of(*specs)
    request.resource_spans[0].scope_spans[0].spans[2].span_id = b"\x01\x02"
    request.resource_spans[0].scope_spans[0].spans[3].start_time_unix_nano = 5
    answer = post(request.SerializeToString(), token_for(ada))
    assert answer.status_code == 200
    partial = response_of(answer).partial_success
    assert partial.rejected_spans == 2 and "span_id" in partial.error_message
    trace = IngestedTrace.objects.get(trace_id=trace_id)
    assert len(spans_of(wires_of(trace.session))) == 2


def test_unknown_attributes_stay_visible_on_the_span(ada: User) -> None:
    trace_id = new_trace_id()
    specs = agent_trace(trace_id)
    specs[1].attributes.update({"acme.tenant": "north", "acme.retries": 2, "acme.tags": ["a", "b"]})
    post(request_of(*specs).SerializeToString(), token_for(ada))
    session = IngestedTrace.objects.get(trace_id=trace_id).session
    model = next(s for s in spans_of(wires_of(session)) if s.span_id == specs[1].span_id)
    otel = model.attributes["otel"]
    assert otel["attributes"]["acme.tenant"] == "north"
    assert otel["attributes"]["acme.retries"] == 2
    assert otel["attributes"]["acme.tags"] == ["a", "b"]
    assert otel["attributes"]["gen_ai.request.model"] == "gpt-test"  # mapped ones kept too
    assert otel["resource"]["deployment.environment"] == "test"
    assert (otel["name"], otel["kind"]) == ("chat gpt-test", "internal")


@pytest.mark.parametrize("generation", ["current", "previous"])
def test_both_releases_of_the_genai_conventions_read_the_same(ada: User, generation: str) -> None:
    trace_id = new_trace_id()
    post(
        request_of(*agent_trace(trace_id, generation=generation)).SerializeToString(),
        token_for(ada),
    )
    trace = IngestedTrace.objects.get(trace_id=trace_id)
    wires = wires_of(trace.session)
    spans = spans_of(wires)
    models = sorted((s for s in spans if s.kind == "model"), key=lambda s: s.start)
    assert [(m.input_tokens, m.output_tokens) for m in models] == [(12, 5), (20, 8)]
    assert models[1].attributes["text"] == "An apple costs 0.5 EUR."
    assert wires[0]["parts"][0]["text"] == "What does an apple cost?"
    # The tool call the model asked for is the execute_tool span's, shown once.
    calls = [p for w in wires for p in w["parts"] if p["kind"] == "tool_call"]
    assert [(c["call_id"], c["name"], c["args"]) for c in calls] == [
        ("call_1", "price_of", {"item": "apple"})
    ]


def test_an_ingested_session_cannot_be_run_or_count_against_the_run_cap(
    ada: User, settings: Any
) -> None:
    from studio import services
    from studio.errors import ConflictError

    settings.STUDIO_MAX_CONCURRENT_RUNS_PER_USER = 1
    _root, first, *_ = agent_trace(new_trace_id())
    post(request_of(first).SerializeToString(), token_for(ada))  # stays running
    session = Session.objects.get(owner=ada)
    with pytest.raises(ConflictError):
        services.start_run(session, "go on")
    services.sessions._check_run_cap(ada.pk)  # the open ingested run holds no slot


def test_hostile_names_and_values_are_stored_clipped_and_as_text(ada: User) -> None:
    trace_id = new_trace_id()
    specs = agent_trace(trace_id)
    specs[0].attributes["gen_ai.agent.name"] = "<script>alert(1)</script>" + "a" * 300
    specs[2].attributes["gen_ai.tool.name"] = "t\x00" * 100
    specs[2].attributes["gen_ai.tool.call.result"] = "nul\x00byte"
    specs[1].attributes["acme.nan"] = float("nan")
    assert post(request_of(*specs).SerializeToString(), token_for(ada)).status_code == 200
    trace = IngestedTrace.objects.get(trace_id=trace_id)
    assert trace.agent.name.startswith("<script>") and len(trace.agent.name) == 200
    tool = next(s for s in spans_of(wires_of(trace.session)) if s.kind == "tool")
    assert "\x00" not in tool.name and len(tool.name) <= 100
    assert tool.attributes["result"] == "nul\ufffdbyte"


def test_an_ingested_run_is_not_exported_again(ada: User, monkeypatch: pytest.MonkeyPatch) -> None:
    from studio.runs import records

    exported: list[Any] = []

    class Recorder:
        def run_ended(self, run: Any, spans: Any) -> None:
            exported.append(run)

    monkeypatch.setattr(records.otel, "export", lambda: Recorder())
    assert (
        post(
            request_of(*agent_trace(new_trace_id())).SerializeToString(), token_for(ada)
        ).status_code
        == 200
    )
    assert Run.objects.get().status == "succeeded"
    assert exported == []  # else Studio exporting to itself would go round forever


def test_a_request_that_loses_the_race_to_make_a_trace_appends_to_it(
    ada: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from studio.services import ingest

    trace_id = new_trace_id()
    root, first, tool, second = agent_trace(trace_id)
    ingest.ingest(ada.pk, request_of(first))
    real, calls = ingest._locked, {"n": 0}

    def not_committed_yet(owner_id: int, found_id: str) -> Any:
        calls["n"] += 1  # the other request's trace is not visible at the first look
        return None if calls["n"] == 1 else real(owner_id, found_id)

    monkeypatch.setattr(ingest, "_locked", not_committed_yet)
    ingest.ingest(ada.pk, request_of(tool, second, root))
    assert calls["n"] == 2
    assert Session.objects.count() == 1 and Run.objects.count() == 1
    trace = IngestedTrace.objects.get(trace_id=trace_id)
    assert len(spans_of(wires_of(trace.session))) == 4
    assert Run.objects.get().status == "succeeded"
