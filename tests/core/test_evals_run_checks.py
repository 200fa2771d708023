"""The evaluators of what a run did: its tool calls (trajectory), what it spent
(limits) and the state it left; and the JSON subset rule they share."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from agents_core.evals.contracts import (
    Case,
    CaseInput,
    Expectation,
    ExpectedToolCall,
    Limits,
    LimitsSpec,
    ObservedToolCall,
    Outcome,
    StateSpec,
    TrajectorySpec,
)
from agents_core.evals.evaluators import evaluate
from agents_core.evals.run_checks import match_calls
from agents_core.evals.subset import json_subset, subset_difference


def case(**expect: Any) -> Case:
    return Case(name="c", input=CaseInput(turns=["hi"]), expect=Expectation(**expect))


def want(name: str, **args: Any) -> ExpectedToolCall:
    return ExpectedToolCall(name=name, args=args)


def did(name: str, **args: Any) -> ObservedToolCall:
    return ObservedToolCall(name=name, args=args)


# json_subset


def test_subset_rules() -> None:
    assert json_subset({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3})
    assert not json_subset({"a": {"b": 1}}, {"a": {"b": 2}})
    assert json_subset([{"x": 1}, 2], [{"x": 1, "y": 0}, 2])
    assert not json_subset([1], [1, 2])  # arrays are values: same length
    assert json_subset(1, 1.0)
    assert not json_subset(True, 1)
    assert not json_subset(0, False)
    assert not json_subset(None, {})
    assert not json_subset("1", 1)
    assert json_subset({}, {"anything": True})


def test_subset_difference_says_where() -> None:
    assert subset_difference({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}) == (
        "at a.b[1]: expected 2, got 3"
    )
    assert subset_difference({"a": 1}, {}) == "at a: missing (expected 1)"
    assert subset_difference([1], [1, 2]) == "at the top: expected 1 item(s), got 2 ([1, 2])"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(json_values)
def test_every_value_is_a_subset_of_itself(value: Any) -> None:
    assert json_subset(value, value)


@given(st.dictionaries(st.text(max_size=3), json_values, max_size=4), st.data())
def test_dropping_keys_keeps_a_subset(actual: dict[str, Any], data: st.DataObject) -> None:
    keys = data.draw(
        st.lists(st.sampled_from(sorted(actual)), unique=True) if actual else st.just([])
    )
    assert json_subset({key: actual[key] for key in keys}, actual)


@given(json_values, json_values)
def test_subset_both_ways_is_equality(a: Any, b: Any) -> None:
    if json_subset(a, b) and json_subset(b, a):
        assert a == b
    assert (subset_difference(a, b) is None) == json_subset(a, b)


# trajectory


async def test_exact_trajectory_with_nested_argument_subsets() -> None:
    expect = case(tool_calls=[want("search", q={"city": "Paris"}), want("book")])
    outcome = Outcome(
        tool_calls=[did("search", q={"city": "Paris", "lang": "fr"}, n=3), did("book", id=7)]
    )
    assert (await evaluate(TrajectorySpec(), expect, outcome)).status == "passed"


async def test_exact_trajectory_says_the_first_difference() -> None:
    expect = case(tool_calls=[want("search", q="Paris"), want("book")])
    swapped = Outcome(tool_calls=[did("book"), did("search", q="Paris")])
    verdict = await evaluate(TrajectorySpec(), expect, swapped)
    assert verdict.status == "failed"
    assert verdict.detail == 'call 1: expected search({"q": "Paris"}), got book()'
    wrong_args = Outcome(tool_calls=[did("search", q="Rome"), did("book")])
    detail = (await evaluate(TrajectorySpec(), expect, wrong_args)).detail
    assert detail == 'call 1 (search): arguments at q: expected "Paris", got "Rome"'
    short = Outcome(tool_calls=[did("search", q="Paris")])
    assert (await evaluate(TrajectorySpec(), expect, short)).detail == (
        "1 call(s) missing after call 1: book()"
    )
    long = Outcome(tool_calls=[did("search", q="Paris"), did("book"), did("pay")])
    assert (
        "1 unexpected call(s) after call 2: pay()"
        in (await evaluate(TrajectorySpec(), expect, long)).detail
    )


async def test_any_order_counts_duplicates() -> None:
    spec = TrajectorySpec(mode="any_order")
    expect = case(tool_calls=[want("search"), want("search"), want("book")])
    assert (
        await evaluate(
            spec, expect, Outcome(tool_calls=[did("book"), did("search", q=1), did("search", q=2)])
        )
    ).status == "passed"
    once = await evaluate(spec, expect, Outcome(tool_calls=[did("book"), did("search")]))
    assert once.status == "failed"
    assert once.detail == "too few search calls match search()"
    extra = await evaluate(
        spec, expect, Outcome(tool_calls=[did("search"), did("search"), did("book"), did("pay")])
    )
    assert (extra.status, extra.detail) == ("failed", "1 unexpected call(s): pay()")


async def test_any_order_pairs_calls_by_matching_not_greedily() -> None:
    # A greedy pass gives the first actual call to the looser expected call, and the
    # precise one is left with nothing; a matching pairs both.
    expected = [want("search"), want("search", city="Paris")]
    actual = [did("search", city="Paris"), did("search", city="Rome")]
    assert match_calls(expected, actual) == [1, 0]
    verdict = await evaluate(
        TrajectorySpec(mode="any_order"), case(tool_calls=expected), Outcome(tool_calls=actual)
    )
    assert verdict.status == "passed"


async def test_subset_allows_other_calls_and_names_the_missing_one() -> None:
    spec = TrajectorySpec(mode="subset")
    expect = case(tool_calls=[want("pay", amount=3)])
    ok = Outcome(tool_calls=[did("look"), did("pay", amount=3, currency="EUR")])
    assert (await evaluate(spec, expect, ok)).status == "passed"
    wrong = await evaluate(spec, expect, Outcome(tool_calls=[did("pay", amount=4)]))
    assert (
        wrong.detail
        == 'no pay call matches pay({"amount": 3}): arguments at amount: expected 3, got 4'
    )
    none = await evaluate(spec, expect, Outcome(tool_calls=[did("look")]))
    assert none.detail == 'no pay call was made (expected pay({"amount": 3}))'


async def test_trajectory_is_skipped_without_expected_calls_but_not_with_an_empty_list() -> None:
    assert (await evaluate(TrajectorySpec(), case(), Outcome())).status == "skipped"
    no_calls = await evaluate(TrajectorySpec(), case(tool_calls=[]), Outcome(tool_calls=[did("x")]))
    assert no_calls.status == "failed"


# limits


async def test_limits_pass_and_fail_with_figures() -> None:
    limits = Limits(max_cost=Decimal("0.10"), max_tokens=1000, max_latency_s=5, max_steps=3)
    spent = Outcome(cost=Decimal("0.05"), tokens=900, latency_s=1.2, steps=3)
    passed = await evaluate(LimitsSpec(limits=limits), case(), spent)
    assert passed.status == "passed"
    assert passed.detail == (
        "within the limits: cost 0.05 (limit 0.10); tokens 900 (limit 1000); "
        "latency 1.2s (limit 5s); steps 3 (limit 3)"
    )
    just_over = spent.model_copy(update={"latency_s": 5.0001})
    assert (await evaluate(LimitsSpec(limits=limits), case(), just_over)).status == "failed"
    over = spent.model_copy(update={"tokens": 1200, "steps": 4})
    failed = await evaluate(LimitsSpec(), case(limits=limits), over)
    assert failed.status == "failed"
    assert failed.detail == "over the limit: tokens 1200 (limit 1000); steps 4 (limit 3)"


async def test_an_unknown_cost_under_a_cost_limit_is_an_error_not_a_pass() -> None:
    verdict = await evaluate(
        LimitsSpec(limits=Limits(max_cost=Decimal(1))), case(), Outcome(cost=None)
    )
    assert verdict.status == "error"
    assert "cost is unknown" in verdict.detail
    # ... but a limit it is known to exceed still fails it.
    over = Limits(max_cost=Decimal(1), max_steps=0)
    assert (await evaluate(LimitsSpec(limits=over), case(), Outcome(steps=2))).status == "failed"
    # Without a cost limit, an unknown cost does not matter.
    assert (
        await evaluate(LimitsSpec(limits=Limits(max_steps=5)), case(), Outcome())
    ).status == "passed"


async def test_limits_are_skipped_when_none_is_set() -> None:
    assert (await evaluate(LimitsSpec(), case(), Outcome())).status == "skipped"
    assert (await evaluate(LimitsSpec(limits=Limits()), case(), Outcome())).status == "skipped"


# state


async def test_state_is_a_json_subset_of_the_end_state() -> None:
    expect = case(state={"cart": {"items": [{"sku": "a"}]}})
    end = Outcome(state={"cart": {"items": [{"sku": "a", "qty": 1}], "total": 3}, "user": "x"})
    assert (await evaluate(StateSpec(), expect, end)).status == "passed"
    other = Outcome(state={"cart": {"items": []}})
    verdict = await evaluate(StateSpec(), expect, other)
    assert verdict.status == "failed"
    assert verdict.detail.startswith("state at cart.items: expected 1 item(s), got 0")
    assert (await evaluate(StateSpec(), case(), end)).status == "skipped"
