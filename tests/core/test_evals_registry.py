"""Custom evaluators registered in Python: listing, running (sync and async), and the
isolation of their failures; and the built-in ones."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import date
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agents_core.evals.contracts import Case, CaseInput, CustomSpec, ExactSpec, Outcome, Verdict
from agents_core.evals.evaluators import evaluate, evaluate_all
from agents_core.evals.registry import (
    ParamField,
    params_problems,
    register_evaluator,
    registered,
    unregister_evaluator,
)

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
    assert (bad.status, bad.detail) == (
        "error",
        "max_words's parameter 'max': Input should be a valid integer",
    )
    missing = await evaluate(CustomSpec(name="max_words"), CASE, Outcome())
    assert missing.detail == "max_words's parameter 'max': Field required"
    extra = await evaluate(CustomSpec(name="no_error", params={"strict": True}), CASE, Outcome())
    assert (extra.status, extra.detail) == (
        "error",
        "no_error's parameter 'strict': not a parameter it takes",
    )


class Near(BaseModel):
    model_config = ConfigDict(extra="forbid")

    city: str = Field(min_length=1, description="The city the answer names.")
    within: int = Field(default=10, ge=0, description="Kilometres.")
    since: date = date(2026, 1, 1)  # a default that is not JSON: listed as its JSON


async def test_a_params_model_is_the_evaluators_contract(names: list[str]) -> None:
    seen: list[dict[str, Any]] = []

    @register_evaluator("test.near", description="Names a city.", params=Near)
    def near(case: Case, outcome: Outcome, params: dict[str, Any]) -> Verdict:
        seen.append(params)
        return Verdict(evaluator="x", status="passed")

    names.append("test.near")
    listed = {e.name: e for e in registered()}
    assert listed["test.near"].params == (
        ParamField("city", required=True, description="The city the answer names."),
        ParamField("within", required=False, description="Kilometres.", default=10),
        ParamField("since", required=False, description="", default="2026-01-01"),
    )
    assert listed["no_error"].params == ()  # declares that it takes none
    # the evaluator gets its parameters validated, defaults filled in
    ok = await evaluate(CustomSpec(name="test.near", params={"city": "Paris"}), CASE, Outcome())
    assert ok.status == "passed"
    assert seen == [{"city": "Paris", "within": 10, "since": "2026-01-01"}]
    # parameters its model refuses: an error verdict naming each, the function not called
    bad = CustomSpec(name="test.near", params={"within": -1, "town": "x"})
    assert params_problems("test.near", bad.params) == [
        (("city",), "Field required"),
        (("within",), "Input should be greater than or equal to 0"),
        (("town",), "not a parameter it takes"),
    ]
    verdict = await evaluate(bad, CASE, Outcome())
    assert verdict.status == "error"
    assert verdict.detail.startswith("test.near's parameter 'city': Field required; ")
    assert len(seen) == 1
    # without a params model, anything is passed through as given
    assert params_problems("test.mentions-nothing", {"any": 1}) == []
