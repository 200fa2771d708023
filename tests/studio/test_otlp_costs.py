"""What an ingested trace's model calls cost: priced as their owner's model configs of
the model a span names price it (which the owner can correct), else as Studio's price
table does, else unknown, never zero; a prompt-cache hit at the cached price."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from studio.models import DaySpend, Event, IngestedTrace, ModelConfig, ModelDay, Run
from tests.studio.test_otlp_ingest import post, token_for
from tests.support.otlp_spans import SpanSpec, new_trace_id, request_of

pytestmark = pytest.mark.django_db(transaction=True)


def ingested_run(owner: User, *calls: tuple[str, int, int, int]) -> Run:
    """A trace of ``owner``: a root and one chat span for each call of ``calls``
    (``gen_ai.response.model``, input tokens, of which served from the cache, output)."""
    trace_id = new_trace_id()
    root = SpanSpec(
        "invoke_agent shopper",
        trace_id,
        end_s=len(calls) + 1,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shopper"},
    )
    chats = [
        SpanSpec(
            f"chat {model}",
            trace_id,
            parent=root.span_id,
            start_s=n,
            end_s=n + 0.5,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model.split("-20")[0],
                "gen_ai.response.model": model,
                "gen_ai.usage.input_tokens": tokens_in,
                "gen_ai.usage.cache_read.input_tokens": cached,
                "gen_ai.usage.output_tokens": tokens_out,
            },
        )
        for n, (model, tokens_in, cached, tokens_out) in enumerate(calls)
    ]
    answer = post(request_of(root, *chats).SerializeToString(), token_for(owner))
    assert answer.status_code == 200, answer.content
    return Run.objects.get(pk=IngestedTrace.objects.get(owner=owner, trace_id=trace_id).run_id)


def priced(owner: User, name: str, model: str, **prices: str) -> ModelConfig:
    config = ModelConfig(owner=owner, name=name, provider="openai_compatible", model=model)
    for field, price in prices.items():
        setattr(config, f"price_{field}", Decimal(price))
    config.save()
    return config


def call_costs(run: Run) -> list[Any]:
    calls = Event.objects.filter(run=run, type="agent_message").order_by("seq")
    return [(e.model, e.cost, e.cost_currency) for e in calls]


def test_a_call_is_priced_as_its_owners_config_of_the_model_it_names(ada: User) -> None:
    """The span names the dated snapshot the provider answered with; the owner's config
    names the model: its price applies, cached input at the cached price."""
    priced(ada, "mine", "gpt-4o", input="2", cached_input="1", output="10")
    run = ingested_run(ada, ("gpt-4o-2024-08-06", 12, 0, 5), ("gpt-4o-2024-08-06", 20, 10, 8))
    # 12 x 2 + 5 x 10 = 74 per million; (20 - 10) x 2 + 10 x 1 + 8 x 10 = 110 per million.
    assert call_costs(run) == [
        ("gpt-4o-2024-08-06", Decimal("0.000074"), "USD"),
        ("gpt-4o-2024-08-06", Decimal("0.000110"), "USD"),
    ]
    wires = [e.payload for e in Event.objects.filter(run=run, type="agent_message")]
    assert [w["usage"]["cached_input_tokens"] for w in wires] == [0, 10]
    run.refresh_from_db()
    assert (run.cost, run.cost_complete) == (Decimal("0.000184"), True)
    assert run.session.cost == Decimal("0.000184")
    day = ModelDay.objects.get(owner=ada)
    assert (day.model, day.calls, day.unknown, day.cost) == (
        "gpt-4o-2024-08-06",
        2,
        0,
        Decimal("0.000184"),
    )
    # Spent elsewhere: in the roll-ups, not against the budgets that limit Studio's runs.
    assert not DaySpend.objects.exists()


def test_without_a_config_the_table_prices_it_and_another_users_config_does_not(
    ada: User, bob: User
) -> None:
    priced(bob, "bobs", "gpt-4o-mini", input="100", output="100")  # not ada's price
    run = ingested_run(ada, ("gpt-4o-mini", 1000, 0, 100), ("my-finetune", 50, 0, 5))
    # The shipped table: gpt-4o-mini at 0.15 in, 0.60 out: 150 + 60 per million.
    assert call_costs(run) == [
        ("gpt-4o-mini", Decimal("0.000210"), "USD"),
        ("my-finetune", None, ""),  # priced by nothing: unknown
    ]
    run.refresh_from_db()
    assert (run.cost, run.cost_complete) == (Decimal("0.000210"), False)


def test_configs_that_disagree_or_have_no_price_leave_the_cost_unknown(ada: User) -> None:
    """The table knows gpt-4o, but the owner said what it costs them, and not one thing:
    no guess."""
    priced(ada, "work", "gpt-4o", input="2", output="10")
    priced(ada, "discounted", "GPT-4o", input="1", output="5")
    priced(ada, "unpriced", "o3")
    run = ingested_run(ada, ("gpt-4o", 10, 0, 10), ("o3", 10, 0, 10))
    assert [cost for _, cost, _ in call_costs(run)] == [None, None]
    run.refresh_from_db()
    assert (run.cost, run.cost_complete) == (None, False)


def test_the_admins_sessions_name_the_external_agent_and_say_what_it_cost(
    ada: User, staff: User
) -> None:
    priced_run = ingested_run(ada, ("gpt-4o-mini", 1000, 0, 100))
    unpriced = ingested_run(ada, ("my-finetune", 10, 0, 10))
    admin = Client()
    admin.force_login(staff)
    page = admin.get("/admin/studio/session/").content.decode()
    rows = re.findall(r"<tr[^>]*>.*?</tr>", page.split("<tbody>")[1], re.S)
    cells = [re.findall(r'class="field-(agent|spent)[^"]*">([^<]*)<', row) for row in rows]
    assert sorted(cells) == [
        [("agent", "shopper (external)"), ("spent", "$0.00021")],
        [("agent", "shopper (external)"), ("spent", "—")],  # unknown, not $0.00
    ]
    assert (unpriced.session.cost, unpriced.session.cost_complete) == (0, False)
    shown = admin.get(f"/admin/studio/session/{priced_run.session_id}/change/").content.decode()
    assert "shopper (external)" in shown and "$0.00021" in shown
