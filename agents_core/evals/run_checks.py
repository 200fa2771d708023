"""The evaluators of what a run did rather than what it answered: ``trajectory`` (its
tool calls), ``limits`` (what it spent) and ``state`` (the session state it left).

Tool calls match when their names are equal and the expected arguments are a JSON
subset of the actual ones (``agents_core.evals.subset``). The trajectory modes:

- ``exact``: the same calls in the same order, no more and no fewer;
- ``any_order``: the same calls in any order, no more and no fewer (each actual call
  answers one expected call, so duplicates count: two expected ``search`` calls need
  two actual ones);
- ``subset``: every expected call was made, in any order; other calls may be made too.

Pairing calls whose arguments are subsets is a matching problem (an expected call with
fewer arguments could take the actual call a more precise one needs), so the order-free
modes use a maximum bipartite matching, not a greedy pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal

from agents_core.evals.contracts import (
    Case,
    ExpectedToolCall,
    Limits,
    LimitsSpec,
    ObservedToolCall,
    Outcome,
    StateSpec,
    TrajectorySpec,
    Verdict,
)
from agents_core.evals.output_checks import decided, errored, skipped
from agents_core.evals.subset import json_subset, shown, subset_difference

__all__ = ["check_limits", "check_state", "check_trajectory", "match_calls"]

_LISTED = 3


def check_trajectory(spec: TrajectorySpec, case: Case, outcome: Outcome) -> Verdict:
    """The run's tool calls against the case's expected ones, in the spec's mode."""
    expected = case.expect.tool_calls
    if expected is None:
        return skipped(spec, "the case expects no tool calls")
    actual = outcome.tool_calls
    if spec.mode == "exact":
        problem = _exact_problem(expected, actual)
    else:
        problem = _unordered_problem(expected, actual, extras_allowed=spec.mode == "subset")
    if problem is None:
        return decided(spec, outcome, True, f"{len(actual)} call(s), as expected")
    return decided(spec, outcome, False, problem)


def _fits(expected: ExpectedToolCall, actual: ObservedToolCall) -> bool:
    return expected.name == actual.name and json_subset(expected.args, actual.args)


def _call(call: ExpectedToolCall | ObservedToolCall) -> str:
    return f"{call.name}({shown(call.args)})" if call.args else f"{call.name}()"


def _exact_problem(
    expected: Sequence[ExpectedToolCall], actual: Sequence[ObservedToolCall]
) -> str | None:
    for index, (want, got) in enumerate(zip(expected, actual, strict=False), start=1):
        if want.name != got.name:
            return f"call {index}: expected {_call(want)}, got {_call(got)}"
        difference = subset_difference(want.args, got.args)
        if difference is not None:
            return f"call {index} ({want.name}): arguments {difference}"
    if len(actual) < len(expected):
        missing = ", ".join(_call(call) for call in expected[len(actual) :][:_LISTED])
        return f"{len(expected) - len(actual)} call(s) missing after call {len(actual)}: {missing}"
    if len(actual) > len(expected):
        extra = ", ".join(_call(call) for call in actual[len(expected) :][:_LISTED])
        count = len(actual) - len(expected)
        return f"{count} unexpected call(s) after call {len(expected)}: {extra}"
    return None


def _unordered_problem(
    expected: Sequence[ExpectedToolCall],
    actual: Sequence[ObservedToolCall],
    *,
    extras_allowed: bool,
) -> str | None:
    pairs = match_calls(expected, actual)
    unmatched = [call for call, partner in zip(expected, pairs, strict=True) if partner is None]
    if unmatched:
        return "; ".join(_why_unmatched(call, actual) for call in unmatched[:_LISTED]) + (
            f"; and {len(unmatched) - _LISTED} more" if len(unmatched) > _LISTED else ""
        )
    if not extras_allowed and len(actual) > len(expected):
        used = set(pairs)
        extra = [call for index, call in enumerate(actual) if index not in used]
        listed = ", ".join(_call(call) for call in extra[:_LISTED])
        return f"{len(extra)} unexpected call(s): {listed}"
    return None


def _why_unmatched(call: ExpectedToolCall, actual: Sequence[ObservedToolCall]) -> str:
    same_name = [got for got in actual if got.name == call.name]
    if not same_name:
        return f"no {call.name} call was made (expected {_call(call)})"
    for got in same_name:
        difference = subset_difference(call.args, got.args)
        if difference is not None:
            return f"no {call.name} call matches {_call(call)}: arguments {difference}"
    return f"too few {call.name} calls match {_call(call)}"


def match_calls(
    expected: Sequence[ExpectedToolCall], actual: Sequence[ObservedToolCall]
) -> list[int | None]:
    """For each expected call, the index of the actual call it is paired with (``None``
    when it has none), in a maximum matching: each actual call pairs with at most one
    expected call it fits. Kuhn's augmenting paths, walked without recursion."""
    fits = [[j for j, got in enumerate(actual) if _fits(want, got)] for want in expected]
    owner: list[int | None] = [None] * len(actual)
    assigned: list[int | None] = [None] * len(expected)
    for start in range(len(expected)):
        parent: dict[int, int] = {}
        free = _augmenting_path(start, fits, owner, parent)
        while free is not None:  # flip the path: each call on it takes the next one
            taker = parent[free]
            previous = assigned[taker]
            owner[free], assigned[taker] = taker, free
            free = previous
    return assigned


def _augmenting_path(
    start: int, fits: list[list[int]], owner: list[int | None], parent: dict[int, int]
) -> int | None:
    """A free actual call reachable from ``start`` by alternating edges (``parent``
    records the path), or ``None``."""
    stack: list[tuple[int, Iterator[int]]] = [(start, iter(fits[start]))]
    while stack:
        taker, candidates = stack[-1]
        for candidate in candidates:
            if candidate in parent:
                continue
            parent[candidate] = taker
            holder = owner[candidate]
            if holder is None:
                return candidate
            stack.append((holder, iter(fits[holder])))
            break
        else:
            stack.pop()
    return None


def check_limits(spec: LimitsSpec, case: Case, outcome: Outcome) -> Verdict:
    """What the run spent against the spec's limits, else the case's. A cost limit on a
    run whose cost is unknown is an error (it cannot be checked), never a pass."""
    limits = spec.limits if spec.limits is not None else case.expect.limits
    if limits is None or limits == Limits():
        return skipped(spec, "neither the evaluator nor the case sets a limit")
    over, within = _measure(limits, outcome)
    if over:
        return decided(spec, outcome, False, "over the limit: " + "; ".join(over))
    if limits.max_cost is not None and outcome.cost is None:
        return errored(
            spec,
            f"the cost limit ({limits.max_cost}) cannot be checked: the run's cost is "
            "unknown (a model call has no known price)",
        )
    return decided(spec, outcome, True, "within the limits: " + "; ".join(within))


def _measure(limits: Limits, outcome: Outcome) -> tuple[list[str], list[str]]:
    """What is over its limit and what is within, each as ``name value (limit x)``."""
    figures: list[tuple[str, Decimal | float | int | None, Decimal | float | int | None]] = [
        ("cost", outcome.cost, limits.max_cost),
        ("tokens", outcome.tokens, limits.max_tokens),
        ("latency", outcome.latency_s, limits.max_latency_s),
        ("steps", outcome.steps, limits.max_steps),
    ]
    over: list[str] = []
    within: list[str] = []
    for name, value, limit in figures:
        if limit is None or value is None:
            continue
        said = f"{name} {_figure(name, value)} (limit {_figure(name, limit)})"
        (over if value > limit else within).append(said)
    return over, within


def _figure(name: str, value: Decimal | float | int) -> str:
    return f"{value:g}s" if name == "latency" else str(value)


def check_state(spec: StateSpec, case: Case, outcome: Outcome) -> Verdict:
    """The session state at the end holds the case's expected state (a JSON subset)."""
    expected = case.expect.state
    if expected is None:
        return skipped(spec, "the case expects no state")
    difference = subset_difference(expected, outcome.state)
    if difference is None:
        return decided(spec, outcome, True, "the state holds what the case expects")
    return decided(spec, outcome, False, f"state {difference}")
