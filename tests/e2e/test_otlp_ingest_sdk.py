"""OTLP ingest from real exporters: a small agent traced with the OpenTelemetry SDK
(``tests/support/otel_agent.py``), started as a process, exports over OTLP/HTTP (gzip,
protobuf) to a real Daphne; and the same agent with its model calls made by the official
OpenAI instrumentation around the ``openai`` client, talking to the in-repo
OpenAI-compatible server. Studio shows each trace as one finished run of its owner."""

from __future__ import annotations

from typing import Any

from tests.support.daphne_server import DaphneServer
from tests.support.live_client import Api, prepare_live_data
from tests.support.openai_server import OpenAIServer, TokenUsage
from tests.support.otel_agent import make_ingest_token, start_agent


def ingested_session(api: Api) -> dict[str, Any]:
    sessions = api.ok("GET", "/api/sessions/")
    rows = sessions["results"] if isinstance(sessions, dict) else sessions
    (row,) = rows
    return dict(row)


def run_to_end(server: DaphneServer, token: str, **options: Any) -> str:
    agent = start_agent(server.url, token, **options)
    out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0, err
    return out.splitlines()[0]


def test_the_sdk_exporter_s_trace_becomes_a_finished_run_with_every_span(
    server: DaphneServer,
) -> None:
    setup = prepare_live_data(server, "ada", [])
    trace_id = run_to_end(server, make_ingest_token(server, "ada"), steps=3, delay=0.05)
    api = Api(server.url, setup["token"])
    session = ingested_session(api)
    assert session["external_agent"] == "weather_bot"  # named by the root span
    assert session["title"] == "What is the weather in city 0?"  # the user's first words
    spans = api.ok("GET", f"/api/sessions/{session['id']}/spans/")
    spans = spans["spans"] if isinstance(spans, dict) else spans
    kinds = sorted(s["kind"] for s in spans)
    assert kinds == ["agent", "model", "model", "model", "tool", "tool", "tool"]
    model = next(s for s in spans if s["kind"] == "model")
    assert (model["input_tokens"], model["output_tokens"]) == (10, 4)
    otel = model["attributes"]["otel"]
    assert otel["attributes"]["weather.custom_flag"] is True
    assert otel["resource"]["service.name"] == "otel-test-agent"
    assert otel["trace_id"] == trace_id
    runs = api.ok("GET", f"/api/runs/?session={session['id']}")
    runs = runs["results"] if isinstance(runs, dict) else runs
    assert [r["status"] for r in runs] == ["succeeded"]


def test_spans_of_the_official_openai_instrumentation_show_as_model_calls(
    server: DaphneServer,
) -> None:
    setup = prepare_live_data(server, "ada", [])
    with OpenAIServer() as model_server:
        model_server.reply("Rain in the morning.", usage=TokenUsage(17, 6))
        model_server.reply("Clear skies.", usage=TokenUsage(19, 3))
        run_to_end(
            server,
            make_ingest_token(server, "ada"),
            steps=2,
            delay=0.0,
            openai_url=model_server.base_url,
        )
        assert len(model_server.requests) == 2
    api = Api(server.url, setup["token"])
    session = ingested_session(api)
    spans = api.ok("GET", f"/api/sessions/{session['id']}/spans/")
    spans = spans["spans"] if isinstance(spans, dict) else spans
    models = sorted((s for s in spans if s["kind"] == "model"), key=lambda s: s["start"])
    assert [(m["input_tokens"], m["output_tokens"]) for m in models] == [(17, 6), (19, 3)]
    assert [m["attributes"]["text"] for m in models] == ["Rain in the morning.", "Clear skies."]
    scope = models[0]["attributes"]["otel"]["attributes"]
    assert scope["gen_ai.provider.name"] == "openai"
    assert scope["gen_ai.response.model"] == "test-model"
    events = api.ok("GET", f"/api/sessions/{session['id']}/events/")
    events = events["results"] if isinstance(events, dict) else events
    assert events[0]["type"] == "user_message"
    assert events[0]["parts"][0]["text"] == "What is the weather in city 0?"
