"""The arithmetic of a model call's cost (``studio.costs``), the price table
(``studio.agents.prices``) and how a cost is written (``studio.figures.cost``)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from agents_core import events as core_events
from agents_core.contracts import Cost, Usage
from studio import costs, figures
from studio.agents import prices
from studio.costs import Price

GPT_4O = Price(input=Decimal("2.50"), cached_input=Decimal("1.25"), output=Decimal("10.00"))


def test_a_call_costs_its_input_and_output_at_their_prices_exactly() -> None:
    cost = costs.cost_of(Usage(input_tokens=1_234, output_tokens=567), GPT_4O)
    # 1234 * 2.50 + 567 * 10 = 8755 per million tokens: no float ever touches it.
    assert cost == Cost(amount=Decimal("0.008755"), currency="USD")
    assert cost is not None and cost.amount.as_tuple().exponent == -costs.PLACES


def test_cached_input_tokens_are_charged_at_the_cached_price() -> None:
    cost = costs.call_cost(GPT_4O, input_tokens=1_000, cached_input_tokens=400, output_tokens=0)
    # 600 * 2.50 + 400 * 1.25 = 2000 per million, where 1000 uncached would be 2500
    assert cost.amount == Decimal("0.002")


def test_a_call_reporting_cached_input_pays_the_cached_price_for_that_part() -> None:
    usage = Usage(input_tokens=1_204, cached_input_tokens=1_000, output_tokens=88)
    # 204 * 2.50 + 1000 * 1.25 + 88 * 10 = 2640 per million (3890 had none been cached)
    assert costs.cost_of(usage, GPT_4O) == Cost(amount=Decimal("0.00264"), currency="USD")


def test_cached_tokens_without_a_cached_price_are_charged_as_input() -> None:
    price = Price(input=Decimal(3), output=Decimal(15))
    cost = costs.call_cost(price, input_tokens=1_000, cached_input_tokens=1_000, output_tokens=0)
    assert cost.amount == Decimal("0.003")


def test_more_cached_tokens_than_input_never_makes_a_negative_cost() -> None:
    cost = costs.call_cost(GPT_4O, input_tokens=10, cached_input_tokens=50, output_tokens=0)
    assert cost.amount == Decimal("0.0000125")


@pytest.mark.parametrize(
    ("usage", "price"),
    [(None, GPT_4O), (Usage(input_tokens=5, output_tokens=5), None), (None, None)],
)
def test_missing_usage_or_price_is_unknown_never_zero(usage: Usage | None, price: Price) -> None:
    assert costs.cost_of(usage, price) is None


def test_costs_are_rounded_half_to_even_at_the_last_place() -> None:
    tiny = Price(input=Decimal("0.000025"), output=Decimal(0))
    # 1 token: 2.5e-11, half way between 2e-11 and 3e-11 at ten places -> even (2e-11)
    assert costs.cost_of(Usage(input_tokens=1), tiny) == Cost(
        amount=Decimal("0E-10"), currency="USD"
    )
    assert costs.rounded(Decimal("0.00000000015")) == Decimal("0.0000000002")
    assert costs.rounded(Decimal("0.00000000025")) == Decimal("0.0000000002")


def test_a_stored_cost_does_not_follow_a_later_price() -> None:
    event = core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="i",
        session_id="s",
        author="helper",
        usage=Usage(input_tokens=1_000, output_tokens=1_000),
    )
    priced = costs.priced(event, {"helper": GPT_4O})
    cheaper = Price(input=Decimal("0.15"), output=Decimal("0.60"))
    assert costs.priced(priced, {"helper": cheaper}).cost == priced.cost
    assert priced.cost == Cost(amount=Decimal("0.0125"), currency="USD")
    assert core_events.Event.model_validate(priced.to_wire()) == priced


def test_only_model_calls_of_priced_agents_get_a_cost() -> None:
    def event(kind: core_events.EventType, author: str = "helper", **fields: object) -> object:
        made = core_events.Event(
            type=kind, invocation_id="i", session_id="s", author=author, **fields
        )  # type: ignore[arg-type]
        return costs.priced(made, {"helper": GPT_4O}).cost

    message = core_events.EventType.AGENT_MESSAGE
    assert event(message, latency_ms=3.0) is None  # a model call that reported no usage
    assert event(message, author="other", usage=Usage(input_tokens=1)) is None
    assert event(core_events.EventType.USER_MESSAGE) is None
    assert event(message, usage=Usage(input_tokens=1_000_000)) == Cost(
        amount=Decimal("2.5"), currency="USD"
    )


def test_a_compaction_summary_is_priced_at_its_summarisers_price_not_its_authors() -> None:
    summary = core_events.Event(
        type=core_events.EventType.COMPACTION,
        invocation_id="i",
        session_id="s",
        author="helper",
        usage=Usage(input_tokens=1_000_000),
    )
    cheap = Price(input=Decimal("0.15"), output=Decimal("0.60"))
    assert costs.priced(summary, {"helper": GPT_4O}).cost is None
    assert costs.priced(summary, {"helper": GPT_4O}, cheap).cost == Cost(
        amount=Decimal("0.15"), currency="USD"
    )
    unreported = summary.model_copy(update={"usage": None})
    assert costs.priced(unreported, {}, cheap).cost is None  # unknown, never zero


def test_a_total_adds_known_costs_and_says_when_some_were_unknown() -> None:
    usd = Cost(amount=Decimal("0.25"), currency="USD")
    assert costs.total([usd, usd]) == costs.Total(Decimal("0.50"), "USD", complete=True)
    assert costs.total([usd, None]) == costs.Total(Decimal("0.25"), "USD", complete=False)
    assert costs.total([None]) == costs.Total(None, "USD", complete=False)
    assert costs.total([]) == costs.Total(Decimal(0), "USD", complete=True)
    eur = Cost(amount=Decimal(1), currency="EUR")
    assert costs.total([usd, eur]) == costs.Total(None, "USD", complete=False)


def test_the_price_table_says_when_and_where_its_prices_were_checked() -> None:
    table = json.loads(prices.TABLE.read_text(encoding="utf-8"))
    assert table["checked"] and table["sources"]
    assert "MADE UP" in table["scripted"]["note"]
    for name, entry in table["models"].items():
        assert entry["source"] in table["sources"], name
        assert all(Decimal(entry[key]) >= 0 for key in ("input", "cached_input", "output"))


def test_the_price_table_knows_dated_snapshots_and_no_other_variants() -> None:
    mini = prices.price_for("openai_compatible", "gpt-4o-mini-2024-07-18")
    assert mini is not None and mini.input == Decimal("0.15")
    full = prices.price_for("openai_compatible", "gpt-4o-2024-08-06")
    assert full is not None and full.input == Decimal("2.50")
    sonnet = prices.price_for("openai_compatible", "claude-3-5-sonnet-20241022")
    assert sonnet is not None and sonnet.output == Decimal(15)
    assert prices.price_for("openai_compatible", "claude-3-5-sonnet-latest") == sonnet
    assert prices.price_for("openai_compatible", "gpt-4o-audio-preview") is None
    assert prices.price_for("openai_compatible", "llama3.2") is None
    assert prices.price_for("scripted", "") is not None


@pytest.mark.parametrize(
    ("amount", "currency", "complete", "written"),
    [
        (Decimal("0.0012345"), "USD", True, "$0.0012"),
        (Decimal("0.5"), "USD", True, "$0.50"),
        (Decimal("12.345"), "USD", True, "$12.34"),
        (Decimal("0.0000070000"), "USD", True, "$0.0000070"),
        (Decimal(0), "USD", True, "$0.00"),
        (Decimal("0.5"), "EUR", True, "0.50 EUR"),
        (Decimal("0.0012"), "USD", False, "≥ $0.0012"),
        # Nothing priced but calls of unknown cost (an ingested trace's): unknown, not "≥ $0.00".
        (Decimal(0), "USD", False, ""),
        (None, "USD", True, ""),
    ],
)
def test_a_cost_is_written_with_two_significant_digits_below_one(
    amount: Decimal | None, currency: str, complete: bool, written: str
) -> None:
    assert figures.cost(amount, currency, complete=complete) == written


@pytest.mark.parametrize(
    ("price", "written"),
    [
        (Price(Decimal("2.5"), Decimal("10")), "$2.50 in · $10.00 out"),
        (
            Price(Decimal("0.15"), Decimal("0.6"), cached_input=Decimal("0.075")),
            "$0.15 in ($0.075 cached) · $0.60 out",
        ),
        # Every digit set is kept: a price is not a cost, rounded to two significant digits.
        (Price(Decimal("0.000123"), Decimal("1.234567")), "$0.000123 in · $1.234567 out"),
        (Price(Decimal("0"), Decimal("3"), currency="EUR"), "0.00 EUR in · 3.00 EUR out"),
        (None, "unknown"),
    ],
)
def test_a_price_per_million_tokens_is_written_as_set(price: Price | None, written: str) -> None:
    assert figures.price(price) == written
