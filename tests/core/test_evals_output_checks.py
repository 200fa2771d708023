"""The evaluators of a run's final output: exact, contains, regex, json_schema; and the
spec checks made when a spec is built."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from agents_core.evals.contracts import (
    Case,
    CaseInput,
    ContainsSpec,
    EvaluatorSpec,
    ExactSpec,
    Expectation,
    JsonSchemaSpec,
    Outcome,
    RegexSpec,
)
from agents_core.evals.evaluators import evaluate
from agents_core.evals.output_checks import REGEX_TIMEOUT_S

SPEC = TypeAdapter[EvaluatorSpec](EvaluatorSpec)


def case(**expect: Any) -> Case:
    return Case(name="c", input=CaseInput(turns=["hi"]), expect=Expectation(**expect))


def out(text: str, **fields: Any) -> Outcome:
    return Outcome(final_output=text, **fields)


# exact


async def test_exact_passes_on_the_same_text_after_stripping() -> None:
    verdict = await evaluate(ExactSpec(), case(final_output="Paris"), out("  Paris\n"))
    assert (verdict.status, verdict.score, verdict.evaluator) == ("passed", 1.0, "exact")


async def test_exact_says_where_the_texts_part() -> None:
    verdict = await evaluate(
        ExactSpec(), case(final_output="The capital is Paris."), out("The capital is Rome.")
    )
    assert verdict.status == "failed"
    assert verdict.score == 0.0
    assert verdict.detail == 'the output differs at character 16: expected "Paris.", got "Rome."'


async def test_exact_respects_case_and_strip_options() -> None:
    expect = case(final_output="paris")
    assert (await evaluate(ExactSpec(), expect, out("PARIS"))).status == "failed"
    assert (
        await evaluate(ExactSpec(case_sensitive=False), expect, out("PARIS"))
    ).status == "passed"
    assert (await evaluate(ExactSpec(strip=False), expect, out("paris "))).status == "failed"


async def test_exact_says_extra_and_missing_text() -> None:
    expect = case(final_output="abc")
    assert "goes on after" in (await evaluate(ExactSpec(), expect, out("abcdef"))).detail
    assert "stops early" in (await evaluate(ExactSpec(), expect, out("ab"))).detail
    assert "is empty" in (await evaluate(ExactSpec(), expect, out(""))).detail


async def test_exact_is_skipped_without_an_expected_output() -> None:
    verdict = await evaluate(ExactSpec(label="same answer"), case(), out("x"))
    assert verdict.status == "skipped"
    assert verdict.score is None
    assert verdict.evaluator == "same answer"
    assert "expects no final output" in verdict.detail


async def test_a_failed_run_is_judged_on_what_it_left_and_says_its_error() -> None:
    verdict = await evaluate(
        ExactSpec(), case(final_output="Paris"), out("", error="model_error: down")
    )
    assert verdict.status == "failed"
    assert verdict.detail.endswith("(the run ended with an error: model_error: down)")


# contains


async def test_contains_uses_the_spec_text_else_the_expected_output() -> None:
    assert (
        await evaluate(ContainsSpec(text="PARIS"), case(), out("It is Paris."))
    ).status == "passed"
    own = await evaluate(ContainsSpec(), case(final_output="Paris"), out("It is Rome."))
    assert own.status == "failed"
    assert own.detail == 'the output does not contain "Paris"'
    strict = ContainsSpec(text="PARIS", case_sensitive=True)
    assert (await evaluate(strict, case(), out("It is Paris."))).status == "failed"


async def test_contains_is_skipped_with_nothing_to_look_for() -> None:
    assert (await evaluate(ContainsSpec(), case(), out("x"))).status == "skipped"


# regex


async def test_regex_searches_the_output() -> None:
    spec = RegexSpec(pattern=r"\b\d{3}-\d{4}\b")
    passed = await evaluate(spec, case(), out("call 555-1234 now"))
    assert (passed.status, passed.detail) == ("passed", 'matched "555-1234"')
    failed = await evaluate(spec, case(), out("no number"))
    assert failed.status == "failed"
    assert "no match" in failed.detail
    loose = RegexSpec(pattern="^paris$", case_sensitive=False)
    assert (await evaluate(loose, case(), out("PARIS"))).status == "passed"


def test_a_regex_spec_must_compile() -> None:
    with pytest.raises(ValidationError, match="not a valid regular expression"):
        SPEC.validate_python({"kind": "regex", "pattern": "(unclosed"})


async def test_a_catastrophic_regex_is_stopped_as_an_error() -> None:
    spec = RegexSpec(pattern=r"(a|aa)+$")
    verdict = await evaluate(spec, case(), out("a" * 40 + "!"))
    assert verdict.status == "error"
    assert f"more than {REGEX_TIMEOUT_S:g}s" in verdict.detail


# json_schema

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}


async def test_json_schema_passes_valid_json_even_fenced() -> None:
    spec = JsonSchemaSpec.model_validate({"schema": SCHEMA})
    for text in ['{"city": "Paris"}', 'Here:\n```json\n{"city": "Oslo", "days": 2}\n```']:
        assert (await evaluate(spec, case(), out(text))).status == "passed", text


async def test_json_schema_fails_invalid_json_and_wrong_shapes_with_the_reason() -> None:
    spec = JsonSchemaSpec.model_validate({"schema": SCHEMA})
    not_json = await evaluate(spec, case(), out("Paris, for two days"))
    assert not_json.status == "failed"
    assert "not JSON" in not_json.detail
    wrong = await evaluate(spec, case(), out('{"city": 3}'))
    assert wrong.status == "failed"
    assert "city: 3 is not of type 'string'" in wrong.detail
    empty = await evaluate(spec, case(), out(""))
    assert empty.status == "failed"


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "no-such-type"}, "not a usable JSON Schema"),
        ({"type": "string", "pattern": "^a+$"}, "pattern is not allowed"),
        ({"$ref": "https://example.com/s.json"}, "only references inside the schema"),
    ],
)
def test_a_json_schema_spec_is_checked_when_built(schema: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        SPEC.validate_python({"kind": "json_schema", "schema": schema})


def test_specs_parse_from_their_wire_shape() -> None:
    spec = SPEC.validate_python({"kind": "contains", "text": "x", "label": "has x"})
    assert isinstance(spec, ContainsSpec)
    with pytest.raises(ValidationError):
        SPEC.validate_python({"kind": "nope"})


def test_every_spec_kind_round_trips_through_its_stored_json() -> None:
    specs = TypeAdapter(list[EvaluatorSpec]).validate_python(
        [
            {"kind": "exact", "case_sensitive": False},
            {"kind": "contains", "text": "x"},
            {"kind": "regex", "pattern": "^a"},
            {"kind": "json_schema", "schema": SCHEMA, "label": "shape"},
            {"kind": "trajectory", "mode": "subset"},
            {"kind": "limits", "limits": {"max_cost": "0.5", "max_steps": 3}},
            {"kind": "state"},
            {"kind": "judge", "rubric": "r", "model": "m"},
            {"kind": "custom", "name": "max_words", "params": {"max": 3}},
        ]
    )
    adapter = TypeAdapter(list[EvaluatorSpec])
    stored = json.loads(adapter.dump_json(specs))
    assert stored[3]["schema"] == SCHEMA  # written as specs say it
    assert adapter.validate_python(stored) == specs
