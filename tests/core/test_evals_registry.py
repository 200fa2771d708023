"""Custom evaluators registered in Python: listing, running (sync and async), and the
isolation of their failures; and the built-in ones."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from agents_core.evals.contracts import Case, CaseInput, CustomSpec, ExactSpec, Outcome, Verdict
from agents_core.evals.evaluators import evaluate, evaluate_all
from agents_core.evals.registry import register_evaluator, registered, unregister_evaluator

CASE = Case(name="c", input=CaseInput(turns=["hi"]))


@pytest.fixture
def names() -> Iterator[list[str]]:
    """Names a test registers, forgotten when it ends."""
    made: list[str] = []
    yield made
    for name in made:
        unregister_evaluator(name)


def test_builtins_are_listed_with_their_descriptions() -> None:
    listed = {e.name: e.description for e in registered()}
    assert listed["no_error"] == "The run ended without an error."
    assert "at most" in listed["max_words"]


async def test_a_sync_and_an_async_evaluator_get_case_outcome_and_params(names: list[str]) -> None:
    seen: list[Any] = []

    @register_evaluator("test.mentions", description="Mentions params['word'].")
    def mentions(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        seen.append((case.name, params))
        ok = params["word"] in outcome.final_output
        return Verdict(evaluator="ignored", status="passed" if ok else "failed", score=float(ok))

    @register_evaluator("test.slow")
    async def slow(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        """Waits, then passes."""
        await asyncio.sleep(0)
        return Verdict(evaluator="x", status="passed", detail="waited")

    names += ["test.mentions", "test.slow"]
    spec = CustomSpec(name="test.mentions", params={"word": "Paris"})
    verdict = await evaluate(spec, CASE, Outcome(final_output="in Paris"))
    assert (verdict.status, verdict.evaluator) == ("passed", "custom:test.mentions")
    assert seen == [("c", {"word": "Paris"})]
    labelled = CustomSpec(name="test.slow", label="patience")
    assert (await evaluate(labelled, CASE, Outcome())).evaluator == "patience"
    assert {
        "test.mentions": "Mentions params['word'].",
        "test.slow": "Waits, then passes.",
    }.items() <= {e.name: e.description for e in registered()}.items()


async def test_an_unknown_name_is_an_error_verdict() -> None:
    verdict = await evaluate(CustomSpec(name="nope"), CASE, Outcome())
    assert verdict.status == "error"
    assert verdict.detail.startswith("no custom evaluator named 'nope' (registered: ")
    assert "no_error" in verdict.detail


async def test_an_evaluator_that_raises_is_isolated(names: list[str]) -> None:
    @register_evaluator("test.broken")
    def broken(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        raise KeyError("threshold")

    @register_evaluator("test.sloppy")
    def sloppy(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        return True  # type: ignore[return-value]

    names += ["test.broken", "test.sloppy"]
    specs = [CustomSpec(name="test.broken"), CustomSpec(name="test.sloppy"), ExactSpec()]
    broken_verdict, sloppy_verdict, exact = await evaluate_all(specs, CASE, Outcome())
    assert broken_verdict.status == "error"
    assert broken_verdict.detail == "the evaluator 'test.broken' raised KeyError: 'threshold'"
    assert sloppy_verdict.status == "error"
    assert "returned bool, not a Verdict" in sloppy_verdict.detail
    assert exact.status == "skipped"  # the others still ran


def test_names_are_checked_and_not_taken_twice(names: list[str]) -> None:
    with pytest.raises(ValueError, match="lower case letters"):
        register_evaluator("Has Spaces")

    @register_evaluator("test.once")
    def once(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        return Verdict(evaluator="x", status="passed")

    names.append("test.once")
    with pytest.raises(ValueError, match="already registered"):

        @register_evaluator("test.once")
        def other(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
            return Verdict(evaluator="x", status="failed")

    register_evaluator("test.once")(once)  # the same function again: a re-import


async def test_no_error() -> None:
    failed = await evaluate(CustomSpec(name="no_error"), CASE, Outcome(error="tool_error: boom"))
    assert (failed.status, failed.detail) == ("failed", "tool_error: boom")
    assert (await evaluate(CustomSpec(name="no_error"), CASE, Outcome())).status == "passed"


async def test_max_words() -> None:
    spec = CustomSpec(name="max_words", params={"max": 3})
    assert (await evaluate(spec, CASE, Outcome(final_output="one two three"))).status == "passed"
    over = await evaluate(spec, CASE, Outcome(final_output="one two three four"))
    assert (over.status, over.detail) == ("failed", "4 words, more than 3")
    bad = await evaluate(CustomSpec(name="max_words", params={"max": "3"}), CASE, Outcome())
    assert bad.status == "error"
    assert 'params {"max"' in bad.detail
