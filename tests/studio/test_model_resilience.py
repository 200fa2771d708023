"""Fallback chains, shared rate limits and the response cache, end to end through the
API: model configs and agents made with it, runs queued with it and executed for real
against the in-repo OpenAI-compatible server, events and runs read back with it."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from django.utils.dateparse import parse_datetime
from rest_framework.test import APIClient

from studio import runs
from studio.gates import rate_limits
from studio.models import Event, ModelConfig, RateWindow, Run
from studio.runs.execute import execute_run
from studio.runs.inline import InlineExecutor
from tests.studio.conftest import error_paths, scrape
from tests.support.openai_server import OpenAIServer, TokenUsage

pytestmark = pytest.mark.django_db(transaction=True)

USAGE = TokenUsage(prompt_tokens=10, completion_tokens=5)
FAILURES = "studio_model_failures_total"


class HeldExecutor(InlineExecutor):
    """Keeps queued runs queued: each test executes its runs itself, in order."""

    def submit(self, run: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def held_runs() -> Iterator[None]:
    chosen = runs._executor
    runs._executor = HeldExecutor()
    yield
    runs._executor = chosen


@pytest.fixture
def servers() -> Iterator[tuple[OpenAIServer, OpenAIServer]]:
    with OpenAIServer() as first, OpenAIServer() as second:
        yield first, second


def create_model(api: APIClient, name: str, server: OpenAIServer, **fields: Any) -> None:
    body = {
        "name": name,
        "provider": "openai_compatible",
        "model": f"{name}-model",
        "base_url": server.base_url,
        "options": {"streaming": False},
        "price_input": "1000",
        "price_output": "2000",
        **fields,
    }
    response = api.post("/api/models/", body, format="json")
    assert response.status_code == 201, response.content


def create_agent(api: APIClient, **spec: Any) -> str:
    spec = {"name": "helper", "instruction": "Answer briefly.", **spec}
    response = api.post("/api/agents/", {"name": spec["name"], "spec": spec}, format="json")
    assert response.status_code == 201, response.content
    return str(response.json()["id"])


def run_turn(api: APIClient, agent: str, text: str = "hello") -> tuple[dict[str, Any], list[Any]]:
    """Send ``text`` in a new session of ``agent``, execute the run it queues, and read
    back the run and the session's events."""
    session = api.post("/api/sessions/", {"agent": agent}, format="json").json()
    queued = api.post(f"/api/sessions/{session['id']}/messages/", {"text": text}, format="json")
    assert queued.status_code == 202, queued.content
    async_to_sync(execute_run)(Run.objects.get(pk=queued.json()["id"]))
    run = api.get(f"/api/runs/{queued.json()['id']}/").json()
    events = api.get(f"/api/sessions/{session['id']}/events/").json()["results"]
    return run, events


def of_type(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e["type"] == kind]


def test_a_503_from_the_first_model_falls_back_to_the_second_and_the_run_succeeds(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    down, backup = servers
    down.fail(503, times=4)  # every attempt of the retry policy
    backup.reply("from the backup", usage=USAGE)
    create_model(api, "primary", down)
    create_model(api, "backup", backup, price_input="3000", price_output="6000")
    agent = create_agent(api, model="primary", fallback_models=["backup"])

    run, events = run_turn(api, agent)

    assert run["status"] == "succeeded", run
    [switch] = of_type(events, "model_fallback")
    assert switch["fallback"]["from_model"] == "primary"
    assert switch["fallback"]["to_model"] == "backup"
    assert switch["fallback"]["code"] == "model_server_error"
    [answer] = of_type(events, "agent_message")
    assert (answer["model"], answer["parts"][0]["text"]) == ("backup", "from the backup")
    # Priced at the backup's price: 10 * 3000 + 5 * 6000 per million tokens.
    assert Decimal(answer["cost"]["amount"]) == Decimal("0.06")
    assert len(down.requests) == 4 and len(backup.requests) == 1
    stored = Event.objects.get(payload__id=answer["id"])
    assert stored.model == "backup-model"  # budgets and roll-ups count it at the backup


def test_a_model_that_never_answers_is_a_failed_call_in_the_runs_spans_and_time(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    """The time a run spent on a model that failed every attempt is the model's: a failed
    model span in the waterfall, not the runner's overhead."""
    down, _ = servers
    down.fail(503, times=4)  # every attempt of the retry policy
    create_model(api, "primary", down)

    run, events = run_turn(api, create_agent(api, model="primary"))

    assert run["status"] == "failed" and run["error_code"] == "model_server_error"
    [failure] = of_type(events, "error")
    assert failure["error"]["attempts"] == 4 == len(down.requests)
    spans = api.get(f"/api/runs/{run['id']}/spans/").json()["spans"]
    [call] = [span for span in spans if span["kind"] == "model"]
    assert (call["span_id"], call["status"], call["attributes"]["attempts"]) == (
        failure["span_id"],
        "error",
        4,
    )
    assert call["error"].startswith("model_server_error: ")
    took = (parse_datetime(call["end"]) - parse_datetime(call["start"])).total_seconds() * 1000
    assert run["timing"]["model_ms"] == pytest.approx(took, abs=0.01)
    assert run["timing"]["overhead_ms"] < run["timing"]["model_ms"]


def test_a_call_retried_after_503s_shows_each_retry_and_its_attempts_in_its_span(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    """Each failed attempt is stored as it happens (a ``model_retry`` with its error),
    on the call's span, whose attempts and failed attempts the spans API gives; the run
    succeeds with one answer, and its model time includes the retries."""
    flaky, _ = servers
    flaky.fail(503, times=2)
    flaky.reply("third time lucky", usage=USAGE)
    create_model(api, "flaky", flaky)

    run, events = run_turn(api, create_agent(api, model="flaky"))

    assert run["status"] == "succeeded", run
    retries = of_type(events, "model_retry")
    [answer] = of_type(events, "agent_message")
    assert [r["error"]["attempts"] for r in retries] == [1, 2]
    assert {r["error"]["code"] for r in retries} == {"model_server_error"}
    assert all(r["span_id"] == answer["span_id"] for r in retries)
    # The failures name the model; an answer of a chain of one does not (attribution).
    assert ({r["model"] for r in retries}, answer["model"]) == ({"flaky"}, None)
    assert retries[-1]["seq"] < answer["seq"]
    spans = api.get(f"/api/runs/{run['id']}/spans/").json()["spans"]
    [call] = [span for span in spans if span["kind"] == "model"]
    assert (call["status"], call["attributes"]["attempts"]) == ("ok", 3)
    assert [said.split(":")[0] for said in call["attributes"]["retries"]] == [
        "model_server_error"
    ] * 2
    assert call["start"] == retries[0]["started_at"] == answer["started_at"]
    took = (parse_datetime(call["end"]) - parse_datetime(call["start"])).total_seconds() * 1000
    assert run["timing"]["model_ms"] == pytest.approx(took, abs=0.01)
    assert len(flaky.requests) == 3 and answer["usage"]["output_tokens"] == 5


def test_the_metrics_count_failed_attempts_by_code_and_what_followed(
    api: APIClient, staff: User, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    """Two runs: one whose call went through at the third attempt, one whose four
    attempts all failed. /metrics counts each failed attempt once, by its code, as
    retried or failed for good."""
    model, _ = servers
    create_model(api, "flaky", model)
    agent = create_agent(api, model="flaky")
    scraper = Client()
    scraper.force_login(staff)

    def failures() -> dict[str, float]:
        found = scrape(scraper).items()
        named = [(dict(labels), n) for (name, labels), n in found if name == FAILURES]
        return {f"{labels['code']}/{labels['then']}": n for labels, n in named}

    before = failures()
    model.fail(503, times=2)
    model.reply("at last", usage=USAGE)
    assert run_turn(api, agent)[0]["status"] == "succeeded"
    model.fail(503, times=4)
    assert run_turn(api, agent)[0]["status"] == "failed"
    after = failures()

    grew = {key: n - before.get(key, 0) for key, n in after.items() if n > before.get(key, 0)}
    assert grew == {"model_server_error/retried": 5, "model_server_error/failed": 1}


def test_a_fallback_to_an_unknown_model_is_refused_with_its_path(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    create_model(api, "primary", servers[0])
    spec = {"name": "helper", "model": "primary", "fallback_models": ["nope"]}
    response = api.post("/api/agents/", {"name": "helper", "spec": spec}, format="json")
    assert "spec.fallback_models.0" in error_paths(response)


def test_a_second_run_over_one_request_per_minute_fails_as_rate_limited(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer], settings: Any
) -> None:
    # Windows of an hour that nobody waits for: both runs fall in one, and the second
    # finds it full.
    settings.STUDIO_RATE_WINDOW_S = 3600.0
    settings.STUDIO_RATE_MAX_WAIT_S = 0.0
    server = servers[0]
    server.reply("first", usage=USAGE)
    server.reply("never sent", usage=USAGE)
    create_model(api, "limited", server, requests_per_minute=1)
    agent = create_agent(api, model="limited")

    first, _ = run_turn(api, agent)
    second, events = run_turn(api, agent)

    assert first["status"] == "succeeded"
    assert (second["status"], second["error_code"]) == ("failed", "model_rate_limited")
    [error] = of_type(events, "error")
    assert "rate limit of model 'limited'" in error["error"]["message"]
    assert len(server.requests) == 1


def test_a_call_over_the_limit_waits_for_the_next_window_and_the_wait_is_stored(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer], settings: Any
) -> None:
    window = settings.STUDIO_RATE_WINDOW_S = 2.0
    settings.STUDIO_RATE_MAX_WAIT_S = 10.0
    server = servers[0]
    server.reply("first", usage=USAGE)
    server.reply("second", usage=USAGE)
    create_model(api, "limited", server, requests_per_minute=1)
    agent = create_agent(api, model="limited")

    first, _ = run_turn(api, agent)
    # A run elsewhere took the next window's one request too: wherever the second run's
    # call falls (the first run's window or the next), it must wait for the one after.
    config = ModelConfig.objects.get(name="limited")
    taken = RateWindow.objects.get(config=config).start
    limits = rate_limits.Limits(config.pk, requests=1, tokens=None)
    assert rate_limits.take(limits, 1, (taken + 1) * window, window) is None
    second, events = run_turn(api, agent)

    assert (first["status"], second["status"]) == ("succeeded", "succeeded")
    [wait] = of_type(events, "rate_limit_wait")
    assert wait["started_at"] and wait["span_id"]
    assert "rate limit of limited" in wait["parts"][0]["text"]
    types = [e["type"] for e in events]
    assert types.index("rate_limit_wait") < types.index("agent_message")
    assert len(server.requests) == 2
    assert RateWindow.objects.filter(config=config, start__gte=taken + 2).exists()


def test_the_same_request_twice_is_answered_from_the_cache_flagged_and_free(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    server = servers[0]
    server.reply("kept answer", usage=USAGE)  # a second request would find no script: 400
    create_model(api, "cached", server)
    agent = create_agent(api, model="cached", cache={"ttl_s": 600})

    first, first_events = run_turn(api, agent)
    second, second_events = run_turn(api, agent)

    assert (first["status"], second["status"]) == ("succeeded", "succeeded")
    [fresh] = of_type(first_events, "agent_message")
    [kept] = of_type(second_events, "agent_message")
    assert (fresh["cached"], kept["cached"]) == (False, True)
    assert kept["parts"][0]["text"] == "kept answer"
    assert Decimal(fresh["cost"]["amount"]) > 0
    assert Decimal(kept["cost"]["amount"]) == 0 and kept["usage"] is None
    assert Decimal(second["cost"]) == 0 and second["cost_complete"] is True
    assert len(server.requests) == 1


def test_an_agent_without_a_cache_calls_the_model_every_time(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    server = servers[0]
    server.reply("one", usage=USAGE)
    server.reply("two", usage=USAGE)
    create_model(api, "plain", server)
    agent = create_agent(api, model="plain")

    run_turn(api, agent)
    _, events = run_turn(api, agent)

    [answer] = of_type(events, "agent_message")
    assert answer["cached"] is False and answer["parts"][0]["text"] == "two"
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("value", "words"),
    [(0, "at least 1"), (-5, "at least 1"), (1.5, "whole number"), ("many", "whole number")],
)
def test_a_bad_rate_limit_is_refused_with_a_clear_error(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer], value: Any, words: str
) -> None:
    body = {
        "name": "limited",
        "provider": "openai_compatible",
        "model": "m",
        "base_url": servers[0].base_url,
        "tokens_per_minute": value,
    }
    errors = error_paths(api.post("/api/models/", body, format="json"))
    assert words in errors["tokens_per_minute"]


def test_rate_limits_are_stored_returned_and_cleared(
    api: APIClient, ada: User, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    create_model(api, "limited", servers[0], requests_per_minute=30, tokens_per_minute=9000)
    config = api.get("/api/models/").json()["results"][0]
    assert (config["requests_per_minute"], config["tokens_per_minute"]) == (30, 9000)
    patched = api.patch(f"/api/models/{config['id']}/", {"tokens_per_minute": None}, format="json")
    assert patched.json()["tokens_per_minute"] is None


def test_a_window_counts_tokens_and_refuses_what_would_pass_the_limit(ada: User) -> None:
    config = ModelConfig.objects.create(owner=ada, name="m", provider="scripted")
    limits = rate_limits.Limits(config.pk, requests=None, tokens=100)
    now = 960.0  # the start of window 16 of 60 s

    assert rate_limits.take(limits, 60, now, 60.0) is None
    assert rate_limits.take(limits, 60, now + 15, 60.0) == 45.0  # until the next window
    assert rate_limits.take(limits, 40, now + 15, 60.0) is None  # exactly fills it
    assert rate_limits.take(limits, 500, now + 60, 60.0) is None  # larger than all: alone
    assert rate_limits.take(limits, 1, now + 61, 60.0) == 59.0
    windows = RateWindow.objects.order_by("start").values_list("start", "requests", "tokens")
    assert list(windows) == [(16, 2, 100), (17, 1, 500)]  # the last one is kept a while


def test_configs_count_apart(ada: User) -> None:
    one, two = (
        ModelConfig.objects.create(owner=ada, name=name, provider="scripted")
        for name in ("one", "two")
    )
    for config in (one, two):
        limits = rate_limits.Limits(config.pk, requests=1, tokens=None)
        assert rate_limits.take(limits, 5, 0.0, 60.0) is None
        assert rate_limits.take(limits, 5, 1.0, 60.0) == 59.0


def two_turns(api: APIClient, agent: str) -> list[Any]:
    """Two turns in one new session (the second one's end compacts it, at a threshold
    of two conversation events); the session's events after both."""
    session = api.post("/api/sessions/", {"agent": agent}, format="json").json()
    for text in ("hello", "and again"):
        path = f"/api/sessions/{session['id']}/messages/"
        queued = api.post(path, {"text": text}, format="json")
        assert queued.status_code == 202, queued.content
        async_to_sync(execute_run)(Run.objects.get(pk=queued.json()["id"]))
    events: list[Any] = api.get(f"/api/sessions/{session['id']}/events/").json()["results"]
    return events


COMPACT_SOON = {"threshold": 2, "keep_last": 1}


def test_a_compaction_summary_over_the_rate_limit_is_skipped_not_sent(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer], settings: Any
) -> None:
    settings.STUDIO_RATE_WINDOW_S = 3600.0
    settings.STUDIO_RATE_MAX_WAIT_S = 0.0
    server = servers[0]
    for text in ("one", "two", "a summary that must not be asked for"):
        server.reply(text, usage=USAGE)
    create_model(api, "limited", server, requests_per_minute=2)
    agent = create_agent(api, model="limited", compaction=COMPACT_SOON)

    events = two_turns(api, agent)

    assert [e["parts"][0]["text"] for e in of_type(events, "agent_message")] == ["one", "two"]
    assert of_type(events, "compaction") == []
    assert len(server.requests) == 2


def test_an_agent_with_a_cache_takes_a_compaction_summary_from_it(
    api: APIClient, servers: tuple[OpenAIServer, OpenAIServer]
) -> None:
    server = servers[0]
    for text in ("one", "two", "the summary"):
        server.reply(text, usage=USAGE)  # a fourth request would find no script: 400
    create_model(api, "cached", server)
    spec = {"model": "cached", "cache": {"ttl_s": 600}, "compaction": COMPACT_SOON}
    agent = create_agent(api, **spec)

    first = two_turns(api, agent)
    second = two_turns(api, agent)

    [fresh], [kept] = of_type(first, "compaction"), of_type(second, "compaction")
    assert fresh["parts"][0]["text"] == kept["parts"][0]["text"] == "the summary"
    assert fresh["usage"] is not None and kept["usage"] is None
    assert len(server.requests) == 3
    # No model was called for the kept one: marked so, it costs exactly nothing (as a
    # cached answer does), not an unknown amount that leaves its run's cost incomplete.
    assert (fresh["cached"], kept["cached"]) == (False, True)
    assert kept["cost"] == {"amount": "0", "currency": "USD"}
    second_run = Run.objects.filter(session_id=kept["session_id"]).latest("created_at")
    assert second_run.cost_complete
