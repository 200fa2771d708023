"""The typed values of an eval: what a case asks and expects, what a run did (its
``Outcome``), how an evaluator is configured, and what it decided (its ``Verdict``).

Everything here is pure data: the evaluators (``agents_core.evals.evaluators``) turn a
case and an outcome into verdicts, and any host (Studio's eval runs, a test, a script)
builds the outcome from the events a run stored (``agents_core.evals.outcome``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

import regex
from pydantic import (
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    field_validator,
    model_validator,
)

from agents_core.contracts import Contract
from agents_core.structured import schema_problems

CASE_NAME_MAX = 200
TEXT_MAX = 100_000
TURNS_MAX = 50


class CaseInput(Contract):
    """The user turns of a case, sent one after another in one session, and the
    session state it starts from."""

    turns: list[Annotated[str, Field(min_length=1, max_length=TEXT_MAX)]] = Field(
        min_length=1, max_length=TURNS_MAX
    )
    state: dict[str, Any] = Field(default_factory=dict)


class ExpectedToolCall(Contract):
    """A tool call the run should make; ``args`` match as a JSON subset of the call's
    arguments (every key given must be there with an equal or, for objects, a
    subset-matching value)."""

    name: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)


class Limits(Contract):
    """Most a case may spend; ``None`` is no limit."""

    max_cost: Decimal | None = Field(default=None, ge=0)
    max_tokens: NonNegativeInt | None = None
    max_latency_s: NonNegativeFloat | None = None
    max_steps: NonNegativeInt | None = None


class Expectation(Contract):
    """What a case expects; any part left out is not checked by the evaluators that
    read it (an evaluator whose part is missing reports ``skipped``)."""

    final_output: str | None = Field(default=None, max_length=TEXT_MAX)
    tool_calls: list[ExpectedToolCall] | None = None
    state: dict[str, Any] | None = None
    """A JSON subset of the session state when the case ends."""
    limits: Limits | None = None


class Case(Contract):
    """One case of a dataset: its input and its expectation."""

    name: str = Field(min_length=1, max_length=CASE_NAME_MAX)
    input: CaseInput
    expect: Expectation = Field(default_factory=Expectation)
    tags: list[str] = Field(default_factory=list, max_length=20)


# -- what happened ---------------------------------------------------------------------


class ObservedToolCall(Contract):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Outcome(Contract):
    """What one case's session did, read from its stored events and runs."""

    final_output: str = ""
    """The text of the last agent answer of the last turn."""
    tool_calls: list[ObservedToolCall] = Field(default_factory=list)
    """Every tool call of every turn, in the order they were made."""
    state: dict[str, Any] = Field(default_factory=dict)
    cost: Decimal | None = None
    """``None`` when some call's price was unknown."""
    tokens: NonNegativeInt = 0
    latency_s: NonNegativeFloat = 0.0
    """Wall time from the first turn's start to the last turn's end."""
    steps: NonNegativeInt = 0
    """Model calls made."""
    error: str | None = None
    """The error code and message of a turn that did not succeed."""


# -- evaluators ------------------------------------------------------------------------


class _Spec(Contract):
    label: str | None = Field(default=None, max_length=100)
    """The name shown for its verdicts; defaults to the kind."""


class ExactSpec(_Spec):
    kind: Literal["exact"] = "exact"
    case_sensitive: bool = True
    strip: bool = True


class ContainsSpec(_Spec):
    kind: Literal["contains"] = "contains"
    text: str | None = Field(default=None, min_length=1, max_length=TEXT_MAX)
    """Defaults to the case's expected final output."""
    case_sensitive: bool = False


class RegexSpec(_Spec):
    """The final output must contain a match of ``pattern`` (searched, not anchored:
    write ``^...$`` to match it whole). The pattern is in the syntax of the ``regex``
    library (a superset of Python's ``re``), which can stop a match that takes too long:
    a pattern from a user cannot stall the server."""

    kind: Literal["regex"] = "regex"
    pattern: str = Field(min_length=1, max_length=2_000)
    case_sensitive: bool = True

    @field_validator("pattern")
    @classmethod
    def _pattern_compiles(cls, pattern: str) -> str:
        try:
            regex.compile(pattern)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return pattern


class JsonSchemaSpec(_Spec):
    """The final output must be JSON (a fenced ```json block, or prose around one
    object or array, is tolerated) valid against ``schema``: a JSON Schema (draft
    2020-12 unless it names its own ``$schema``) checked when the spec is made, under
    the rules of output schemas from specs (``agents_core.structured.schema_problems``:
    no regular expressions, no references outside the schema)."""

    # Written as ``schema`` (as specs say it), read under either name: a spec dumped
    # and read back (the JSON an eval run stores) is the same spec.
    model_config = ConfigDict(
        serialize_by_alias=True, validate_by_name=True, validate_by_alias=True
    )

    kind: Literal["json_schema"] = "json_schema"
    json_schema: dict[str, Any] = Field(alias="schema")

    @field_validator("json_schema")
    @classmethod
    def _schema_is_usable(cls, schema: dict[str, Any]) -> dict[str, Any]:
        problems = schema_problems(schema)
        if problems:
            said = "; ".join(
                f"{'/'.join(str(p) for p in path) or 'the schema'}: {message}"
                for path, message in problems
            )
            raise ValueError(f"not a usable JSON Schema: {said}")
        return schema


class TrajectorySpec(_Spec):
    kind: Literal["trajectory"] = "trajectory"
    mode: Literal["exact", "any_order", "subset"] = "exact"


class LimitsSpec(_Spec):
    kind: Literal["limits"] = "limits"
    limits: Limits | None = None
    """Defaults to the case's expected limits."""


class StateSpec(_Spec):
    kind: Literal["state"] = "state"


class JudgeSpec(_Spec):
    """An LLM judge: ``rubric`` and the case are sent to one of the user's model
    configurations (named by the host), the answer is parsed as a structured verdict
    with a score on ``scale_min``..``scale_max``; it passes at ``pass_at`` or above."""

    kind: Literal["judge"] = "judge"
    rubric: str = Field(min_length=1, max_length=10_000)
    model: str = Field(min_length=1, max_length=100)
    scale_min: int = 1
    scale_max: int = 5
    pass_at: int = 4
    timeout_s: float = Field(default=60.0, gt=0, le=600)

    @model_validator(mode="after")
    def _scale_is_ordered(self) -> JudgeSpec:
        if not self.scale_min < self.scale_max:
            raise ValueError("scale_min must be below scale_max")
        if not self.scale_min <= self.pass_at <= self.scale_max:
            raise ValueError("pass_at must be on the scale")
        return self


class CustomSpec(_Spec):
    """An evaluator registered in Python (``agents_core.evals.registry``) by ``name``."""

    kind: Literal["custom"] = "custom"
    name: str = Field(min_length=1, max_length=100)
    params: dict[str, Any] = Field(default_factory=dict)


EvaluatorSpec = Annotated[
    ExactSpec
    | ContainsSpec
    | RegexSpec
    | JsonSchemaSpec
    | TrajectorySpec
    | LimitsSpec
    | StateSpec
    | JudgeSpec
    | CustomSpec,
    Field(discriminator="kind"),
]


class Verdict(Contract):
    """One evaluator's decision on one case.

    ``status`` is ``passed`` or ``failed`` when the evaluator decided, ``skipped`` when
    the case does not expect what it checks, and ``error`` when it could not decide (a
    judge that timed out or answered nonsense): an error never counts as a pass."""

    evaluator: str
    status: Literal["passed", "failed", "skipped", "error"]
    score: float | None = Field(default=None, ge=0, le=1)
    """Normalised to 0..1 (a judge's score on its scale, 1 or 0 for the others)."""
    detail: str = ""
    """Why, in words: the first difference, the missing call, the judge's reasoning."""
    prompt: str | None = None
    """A judge's full prompt, so a user can see what it was asked."""
