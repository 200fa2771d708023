"""What runs cost: each model call's cost stored with its event at the price of the
moment, ``Run.cost`` their sum, and prices set per model config through the API."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core import events as core_events
from studio import costs, services, wire
from studio.agents.prices import price_for
from studio.models import Event, ModelConfig, ModelDay, Run, Session
from studio.runs.execute import execute_run
from studio.traces.reads import run_spans
from tests.studio.conftest import (
    client_for,
    error_paths,
    make_agent,
    make_session,
    remote_model,
    scripted_model,
)
from tests.support.openai_server import OpenAIServer, TokenUsage

pytestmark = pytest.mark.django_db(transaction=True)

DEMO_PRICE = price_for("scripted", "")


@sync_to_async
def queued_run(owner: User, *, priced: bool = True) -> Run:
    if not ModelConfig.objects.filter(owner=owner, name="scripted").exists():
        if priced:
            services.create_model_config(owner.pk, name="scripted", provider="scripted")
        else:
            scripted_model(owner)
    agent = make_agent(owner)
    return services.start_run(make_session(owner, agent), "hello")


async def model_calls(run: Run) -> list[Event]:
    rows = Event.objects.filter(session_id=run.session_id, type="agent_message")
    return [row async for row in rows.order_by("seq")]


async def test_a_run_stores_each_model_calls_cost_and_their_sum_as_its_cost(ada: User) -> None:
    finished = await execute_run(await queued_run(ada))
    calls = await model_calls(finished)
    assert calls and all(row.usage for row in calls)
    for row in calls:
        expected = costs.cost_of(row.to_core().usage, DEMO_PRICE)
        assert expected is not None and expected.amount > 0
        assert (row.cost, row.cost_currency) == (expected.amount, "USD")
        assert row.payload["cost"] == {"amount": str(expected.amount), "currency": "USD"}
    assert finished.cost == sum(row.cost for row in calls if row.cost is not None)
    assert (finished.cost_currency, finished.cost_complete) == ("USD", True)
    payload = wire.run_payload(finished)
    assert (payload["cost"], payload["cost_complete"]) == (str(finished.cost), True)
    # Its end added its calls to the owner's day for the overview, once.
    day = await ModelDay.objects.aget(owner=ada)
    assert (day.model, day.currency, day.calls, day.cost) == (
        "scripted", "USD", len(calls), finished.cost
    )  # fmt: skip


async def test_a_changed_price_changes_no_stored_cost_only_later_runs(ada: User) -> None:
    first = await execute_run(await queued_run(ada))
    before = [(row.cost, row.payload["cost"]) for row in await model_calls(first)]
    config = await ModelConfig.objects.aget(owner=ada, name="scripted")
    response = await sync_to_async(client_for(ada).patch)(
        f"/api/models/{config.pk}/", {"price_input": "100", "price_output": "400"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert [(row.cost, row.payload["cost"]) for row in await model_calls(first)] == before
    assert (await Run.objects.aget(pk=first.pk)).cost == first.cost
    session = await Session.objects.aget(pk=first.session_id)
    second = await execute_run(await sync_to_async(services.start_run)(session, "again"))
    assert second.cost is not None and first.cost is not None
    assert second.cost > first.cost * 50


async def test_a_model_without_a_price_stores_an_unknown_cost_never_zero(ada: User) -> None:
    finished = await execute_run(await queued_run(ada, priced=False))
    calls = await model_calls(finished)
    assert calls and all(row.usage for row in calls)
    assert all(row.cost is None and row.payload["cost"] is None for row in calls)
    assert (finished.cost, finished.cost_complete) == (None, False)
    assert wire.run_payload(finished)["cost"] is None


CACHING_PRICE = costs.Price(
    input=Decimal("2.50"), cached_input=Decimal("1.25"), output=Decimal("10")
)


async def test_cached_prompt_tokens_a_provider_reports_are_charged_at_the_cached_price(
    ada: User,
) -> None:
    """Through the real langchain-openai client, over HTTP: OpenAI's
    ``prompt_tokens_details.cached_tokens`` reaches the stored event and its cost."""
    with OpenAIServer(models=["cache-model"]) as server:
        usage = TokenUsage(prompt_tokens=1_204, completion_tokens=88, cached_prompt_tokens=1_000)
        server.reply("ok", usage=usage)

        @sync_to_async
        def setup() -> Run:
            remote_model(ada, server.base_url, model="cache-model", price=CACHING_PRICE)
            agent = make_agent(ada, "caching", model="remote")
            return services.start_run(make_session(ada, agent), "hi")

        finished = await execute_run(await setup())
    assert finished.status == "succeeded", finished.error_message
    [call] = await model_calls(finished)
    assert call.usage == {
        "input_tokens": 1_204,
        "output_tokens": 88,
        "cached_input_tokens": 1_000,
        "reasoning_tokens": 0,
    }
    # 204 * 2.50 + 1000 * 1.25 + 88 * 10 = 2640 per million (3890 at the input price)
    assert (call.cost, call.cost_currency) == (Decimal("0.0026400000"), "USD")
    assert call.to_core().cost == costs.cost_of(call.to_core().usage, CACHING_PRICE)
    assert finished.cost == Decimal("0.00264")


async def test_a_compaction_summary_is_stored_with_its_usage_at_its_summarisers_price(
    ada: User,
) -> None:
    summariser_price = costs.Price(input=Decimal(7), output=Decimal(21))

    @sync_to_async
    def session() -> Session:
        services.create_model_config(ada.pk, name="scripted", provider="scripted")
        summariser = scripted_model(ada, "summariser")
        summariser.set_price(summariser_price)
        summariser.save()
        compaction = {"threshold": 3, "keep_last": 1, "model": "summariser"}
        return make_session(ada, make_agent(ada, compaction=compaction))

    started = await session()
    ended = []
    for text in ("one", "two", "three"):
        run = await sync_to_async(services.start_run)(started, text)
        ended.append(await execute_run(run))
        assert ended[-1].status == "succeeded"
    rows = Event.objects.filter(session=started, type="compaction").order_by("seq")
    summaries = [row async for row in rows]
    assert summaries and all(summary.usage for summary in summaries)
    for row in summaries:
        summary = row.to_core()
        assert summary.cost == costs.cost_of(summary.usage, summariser_price)
        assert summary.cost != costs.cost_of(summary.usage, DEMO_PRICE)
        # A summary is a model call of its run: attributed to it and to its model.
        assert (row.run_id, row.model) != (None, "")
        assert row.model == "summariser"
    # Each run's cost counts its summaries; so do the day totals per model.
    for run in ended:
        own = Event.objects.filter(run_id=run.pk)
        assert run.cost == sum([row.cost async for row in own if row.cost is not None])
    summarised = sum((row.cost for row in summaries if row.cost is not None), Decimal(0))
    day = await ModelDay.objects.aget(owner=ada, model="summariser")
    assert (day.calls, day.cost) == (len(summaries), summarised)


async def test_a_turns_key_facts_call_is_stored_priced_and_counted_in_its_run(ada: User) -> None:
    @sync_to_async
    def session() -> Session:
        services.create_model_config(ada.pk, name="scripted", provider="scripted")
        agent = make_agent(ada, memory={"tools": False, "save_at_end": True})
        return make_session(ada, agent)

    run = await sync_to_async(services.start_run)(await session(), "I am Ada from Oslo")
    finished = await execute_run(run)
    assert finished.status == "succeeded"
    row = await Event.objects.aget(session_id=run.session_id, type="memory_saved")
    saved = row.to_core()
    # The scripted summary digests the transcript: the facts name what the user said.
    facts = [part.text for part in saved.parts if isinstance(part, core_events.TextPart)]
    assert facts and any("Oslo" in fact for fact in facts)
    assert saved.usage is not None and saved.cost == costs.cost_of(saved.usage, DEMO_PRICE)
    assert (row.run_id, row.model) == (finished.pk, "scripted")
    own = Event.objects.filter(run_id=finished.pk)
    assert finished.cost == sum([r.cost async for r in own if r.cost is not None])
    assert saved.cost is not None and finished.cost > saved.cost.amount
    day = await ModelDay.objects.aget(owner=ada, model="scripted")
    assert day.calls == await own.acount()
    # The waterfall shows the call under the root agent, at its cost, and the run's wall
    # time counts it as the model's (not as runner overhead).
    spans = await sync_to_async(run_spans)(finished)
    (facts_span,) = [s for s in spans if s.kind == "model" and s.name == "key facts"]
    root = next(s for s in spans if s.parent_span_id is None)
    assert facts_span.parent_span_id == root.span_id and facts_span.end_seq == row.seq
    assert facts_span.cost is not None and facts_span.cost.amount == saved.cost.amount
    assert root.cost is not None and root.cost.amount == finished.cost
    model_time = sum(s.duration_ms or 0 for s in spans if s.kind == "model")
    assert finished.timing["model_ms"] == pytest.approx(model_time, abs=0.01)


def create_model(user: User, **fields: Any) -> Any:
    body = {"name": "m", "provider": "openai_compatible", "model": "gpt-4o-mini", **fields}
    return client_for(user).post("/api/models/", body, format="json")


def test_a_new_config_of_a_known_model_starts_with_the_tables_price(ada: User) -> None:
    body = create_model(ada).json()
    assert (body["price_input"], body["price_cached_input"], body["price_output"]) == (
        "0.150000",
        "0.075000",
        "0.600000",
    )
    assert body["price_currency"] == "USD"
    unknown = create_model(ada, name="local", model="llama3.2").json()
    assert unknown["price_input"] is None and unknown["price_output"] is None
    chosen = create_model(ada, name="own", price_input="1.5", price_output="2").json()
    assert (chosen["price_input"], chosen["price_cached_input"]) == ("1.500000", None)


def test_a_config_added_in_the_admin_starts_with_the_tables_price_too(
    admin_client: Any, ada: User
) -> None:
    form = {"owner": ada.pk, "provider": "openai_compatible", "options": "{}"}
    form |= {"base_url": "", "price_currency": ""}
    for name, model, extra in [
        ("known", "gpt-4o-mini", {}),
        ("chosen", "gpt-4o-mini", {"price_input": "3", "price_output": "5"}),
    ]:
        answer = admin_client.post(
            "/admin/studio/modelconfig/add/", {**form, "name": name, "model": model, **extra}
        )
        assert answer.status_code == 302, answer.content.decode()[-2000:]
    known = ModelConfig.objects.get(name="known")
    assert known.price() == price_for("openai_compatible", "gpt-4o-mini")
    chosen = ModelConfig.objects.get(name="chosen")
    assert (chosen.price_input, chosen.price_output, chosen.price_cached_input) == (
        Decimal(3), Decimal(5), None
    )  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"price_input": "-0.01"}, "price_input"),
        ({"price_output": "1234567.5"}, "price_output"),
        ({"price_cached_input": "0.0000001"}, "price_cached_input"),
        ({"price_input": "cheap"}, "price_input"),
        ({"price_currency": "usd"}, "price_currency"),
        ({"price_currency": "DOLLARS"}, "price_currency"),
    ],
)
def test_a_bad_price_is_refused_with_its_field(
    ada: User, fields: dict[str, str], path: str
) -> None:
    assert path in error_paths(create_model(ada, **fields))
    assert not ModelConfig.objects.filter(owner=ada).exists()


def test_the_admin_run_list_shows_each_runs_cost_and_whether_it_is_complete(
    admin_client: Any, ada: User
) -> None:
    priced = services.start_run(make_session(ada), "one")
    partial = services.start_run(make_session(ada), "two")
    usd = {"cost_currency": "USD"}
    Run.objects.filter(pk=priced.pk).update(cost=Decimal("0.0012345"), cost_complete=True, **usd)
    Run.objects.filter(pk=partial.pk).update(cost=Decimal("2.5"), cost_complete=False, **usd)
    page = admin_client.get("/admin/studio/run/").content.decode()
    assert "$0.0012" in page and "≥ $2.50" in page


async def test_a_runs_end_reads_no_user_and_takes_no_savepoint_once_its_day_is_kept(
    ada: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studio.runs import records

    first = await execute_run(await queued_run(ada))  # the day's first run adds its row
    session = await Session.objects.aget(pk=first.session_id)
    statements: list[str] = []
    end_run = records.end_run

    def counted(*args: Any, **kwargs: Any) -> Any:
        with CaptureQueriesContext(connection) as queries:
            ended = end_run(*args, **kwargs)
        statements.extend(query["sql"] for query in queries.captured_queries)
        return ended

    monkeypatch.setattr(records, "end_run", counted)
    second = await execute_run(await sync_to_async(services.start_run)(session, "again"))
    assert second.status == "succeeded" and statements
    assert not [sql for sql in statements if "SAVEPOINT" in sql]
    assert not [sql for sql in statements if 'FROM "auth_user"' in sql]
    assert await ModelDay.objects.filter(owner=ada).aget() is not None


async def test_a_calls_model_is_the_one_its_run_was_built_with_though_changed_since(
    ada: User,
) -> None:
    run = await queued_run(ada)
    changed: list[int] = []

    async def change_the_config(event: core_events.Event) -> None:
        if not changed:  # mid-run: the config now names another model
            rows = ModelConfig.objects.filter(owner=ada, name="scripted")
            changed.append(await rows.aupdate(model="renamed-since"))

    finished = await execute_run(run, on_event=change_the_config)
    assert changed == [1]
    calls = await model_calls(finished)
    assert calls and {row.model for row in calls} == {"scripted"}
