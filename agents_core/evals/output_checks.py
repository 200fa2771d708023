"""The evaluators of a run's final output: ``exact``, ``contains``, ``regex`` and
``json_schema``.

Each is a pure function of the spec, the case and the outcome. A run that ended with an
error is judged on the output it has (usually none, so it fails), and the detail of a
failure says the run's error too, so a user sees why the output is missing.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import regex

from agents_core.evals.contracts import (
    Case,
    ContainsSpec,
    ExactSpec,
    JsonSchemaSpec,
    Outcome,
    RegexSpec,
    Verdict,
)
from agents_core.evals.subset import shown
from agents_core.exceptions import ConfigurationError
from agents_core.structured import OutputInvalid, OutputSchema

__all__ = [
    "REGEX_TIMEOUT_S",
    "check_contains",
    "check_exact",
    "check_json_schema",
    "check_regex",
    "decided",
    "label_of",
]

REGEX_TIMEOUT_S = 1.0
"""Longest a regex evaluator's match may take before its verdict is an error."""
_EXCERPT = 60


def label_of(spec: Any) -> str:
    """The name a spec's verdicts are shown under: its label, else a custom
    evaluator's name, else its kind."""
    label: str | None = spec.label
    if label:
        return label
    if spec.kind == "custom":
        return f"custom:{spec.name}"
    return str(spec.kind)


def decided(spec: Any, outcome: Outcome, passed: bool, detail: str) -> Verdict:
    """A passed or failed verdict (score 1 or 0); a failure's detail also says the
    run's error, if it had one."""
    if not passed and outcome.error:
        detail = f"{detail} (the run ended with an error: {outcome.error})"
    return Verdict(
        evaluator=label_of(spec),
        status="passed" if passed else "failed",
        score=1.0 if passed else 0.0,
        detail=detail,
    )


def skipped(spec: Any, why: str) -> Verdict:
    return Verdict(evaluator=label_of(spec), status="skipped", detail=why)


def errored(spec: Any, why: str) -> Verdict:
    return Verdict(evaluator=label_of(spec), status="error", detail=why)


def check_exact(spec: ExactSpec, case: Case, outcome: Outcome) -> Verdict:
    """The final output equals the case's expected output (after stripping surrounding
    whitespace and ignoring case, as the spec says)."""
    expected = case.expect.final_output
    if expected is None:
        return skipped(spec, "the case expects no final output")
    want, got = (
        _normal(expected, spec.strip, spec.case_sensitive),
        _normal(outcome.final_output, spec.strip, spec.case_sensitive),
    )
    if want == got:
        return decided(spec, outcome, True, "the output is the expected one")
    return decided(spec, outcome, False, first_difference(want, got))


def _normal(text: str, strip: bool, case_sensitive: bool) -> str:
    text = text.strip() if strip else text
    return text if case_sensitive else text.casefold()


def first_difference(expected: str, actual: str) -> str:
    """Where two different texts part, in words, with a little of each from there."""
    if not actual:
        return f"the output is empty; expected {_excerpt(expected, 0)}"
    at = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    if at == len(expected):
        return f"the output goes on after the expected text: {_excerpt(actual, at)} is extra"
    if at == len(actual):
        return f"the output stops early, at character {at + 1}; missing {_excerpt(expected, at)}"
    return (
        f"the output differs at character {at + 1}: expected {_excerpt(expected, at)}, "
        f"got {_excerpt(actual, at)}"
    )


def _excerpt(text: str, at: int) -> str:
    part = text[at : at + _EXCERPT]
    return json.dumps(part + ("…" if len(text) > at + _EXCERPT else ""), ensure_ascii=False)


def check_contains(spec: ContainsSpec, case: Case, outcome: Outcome) -> Verdict:
    """The final output contains the spec's text, else the case's expected output."""
    text = spec.text if spec.text is not None else case.expect.final_output
    if not text:
        return skipped(spec, "neither the evaluator nor the case says what text to look for")
    found = (
        text in outcome.final_output
        if spec.case_sensitive
        else text.casefold() in outcome.final_output.casefold()
    )
    if found:
        return decided(spec, outcome, True, f"the output contains {shown(text)}")
    what = "is empty" if not outcome.final_output else f"does not contain {shown(text)}"
    return decided(spec, outcome, False, f"the output {what}")


async def check_regex(spec: RegexSpec, case: Case, outcome: Outcome) -> Verdict:
    """The final output contains a match of the spec's pattern. The match runs in a
    thread with a timeout: a pattern that takes too long is an error, not a failure."""
    flags = 0 if spec.case_sensitive else regex.IGNORECASE
    try:
        pattern = regex.compile(spec.pattern, flags)
        match = await asyncio.to_thread(
            pattern.search, outcome.final_output, timeout=REGEX_TIMEOUT_S, concurrent=True
        )
    except TimeoutError:
        return errored(
            spec,
            f"matching /{spec.pattern}/ took more than {REGEX_TIMEOUT_S:g}s; simplify the "
            "pattern (nested repetition such as (a|aa)+ can take exponential time)",
        )
    except regex.error as exc:  # a spec built without validation
        return errored(spec, f"not a valid regular expression: {exc}")
    if match is None:
        return decided(spec, outcome, False, f"no match for /{spec.pattern}/ in the output")
    return decided(spec, outcome, True, f"matched {shown(match.group(0))}")


def check_json_schema(spec: JsonSchemaSpec, case: Case, outcome: Outcome) -> Verdict:
    """The final output parses as JSON and is valid against the spec's schema."""
    from jsonschema.exceptions import SchemaError  # imported by OutputSchema.of first

    try:
        schema = OutputSchema.of(spec.json_schema)
        schema.parse(outcome.final_output)
    except OutputInvalid as exc:
        return decided(spec, outcome, False, "; ".join(exc.problems))
    except (SchemaError, ConfigurationError) as exc:  # a spec built without validation
        return errored(spec, f"the schema cannot be used: {exc}")
    return decided(spec, outcome, True, "the output is JSON valid against the schema")
