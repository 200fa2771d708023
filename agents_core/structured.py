"""Structured output: an agent's final answer as a JSON value of a declared shape.

An ``OutputSchema`` is a JSON Schema (checked with ``jsonschema``, draft 2020-12 unless
the schema names its own ``$schema``) or a pydantic model. The final answer is parsed as
JSON (a fenced ```json block, or prose around one object or array, is tolerated) and
validated; the problems of an answer that does not match are said in words, so a
corrective re-prompt can quote them. References are resolved inside the schema only:
nothing is ever fetched.

Schemas from specs (``schema_problems``) are untrusted: besides being valid, they may
not use regular expressions (``pattern``, ``patternProperties``: Python's matcher can
take exponential time on a crafted pattern, stalling the server) or references outside
the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from agents_core.exceptions import ConfigurationError

if TYPE_CHECKING:
    from jsonschema import exceptions as schema_errors
    from jsonschema.protocols import Validator

# jsonschema is imported where a schema is first checked (~0.1 s, with ``referencing``
# and the metaschemas it loads): every process that imports the SDK paid it at start-up,
# and most never see an output schema.

MAX_PROBLEMS = 5
PROBLEM_CHARS = 300
_FENCED = re.compile(r"```(?:json|JSON)?\s*(.*?)\s*```", re.S)
Path = tuple[str | int, ...]
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_SCHEMA_VALUES = frozenset(
    {
        "items", "additionalProperties", "additionalItems", "not", "if", "then", "else",
        "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties",
    }
)  # fmt: skip
_REGEX_KEYWORDS = ("pattern", "patternProperties")


class OutputInvalid(Exception):
    """An answer that does not match; ``problems`` say why, in words."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def schema_problems(schema: object) -> list[tuple[Path, str]]:
    """What is wrong with ``schema`` (from a spec) as an output schema: (path inside it,
    message) pairs, empty when it can be used."""
    if not isinstance(schema, dict):
        return [((), "an output schema must be a JSON object")]
    from jsonschema import validators

    cls = validators.validator_for(schema, default=validators.Draft202012Validator)
    problems = [
        (tuple(error.absolute_path), _clip(error.message))
        for error in cls(cls.META_SCHEMA).iter_errors(schema)
    ]
    if not problems:
        problems = list(_untrusted_keywords(schema, ()))
    return problems[:MAX_PROBLEMS]


def _untrusted_keywords(schema: object, path: Path) -> Iterator[tuple[Path, str]]:
    """Regular expressions and outside references anywhere in ``schema`` (a valid one)."""
    if not isinstance(schema, dict):
        return
    for keyword in _REGEX_KEYWORDS:
        if keyword in schema:
            yield (
                (*path, keyword),
                (
                    f"{keyword} is not allowed in an output schema (a regular expression could "
                    "stall the server); use enum, const or lengths, or say the format in the "
                    "instruction"
                ),
            )
    for keyword in ("$ref", "$dynamicRef"):
        ref = schema.get(keyword)
        if isinstance(ref, str) and not ref.startswith("#"):
            yield (*path, keyword), "only references inside the schema (#/...) are allowed"
    for sub, sub_path in _subschemas(schema, path):
        yield from _untrusted_keywords(sub, sub_path)


def _subschemas(schema: dict[str, Any], path: Path) -> Iterator[tuple[object, Path]]:
    for keyword, value in schema.items():
        if keyword in _SCHEMA_MAPS and isinstance(value, dict):
            yield from ((sub, (*path, keyword, name)) for name, sub in value.items())
        elif keyword in _SCHEMA_LISTS and isinstance(value, list):
            yield from ((sub, (*path, keyword, index)) for index, sub in enumerate(value))
        elif keyword in _SCHEMA_VALUES:
            yield value, (*path, keyword)


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """What a final answer must be. Build it with ``of``."""

    json_schema: dict[str, Any]
    model: type[BaseModel] | None = None
    _validator: Validator | None = None

    @classmethod
    def of(cls, schema: dict[str, Any] | type[BaseModel] | OutputSchema) -> OutputSchema:
        """From a JSON Schema (``SchemaError`` when it is not one) or a pydantic model."""
        if isinstance(schema, OutputSchema):
            return schema
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return cls(schema.model_json_schema(), model=schema)
        from jsonschema import validators

        validator_cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        validator_cls.check_schema(schema)
        return cls(schema, _validator=validator_cls(schema))

    def parse(self, text: str) -> Any:
        """The answer's JSON value, validated; ``OutputInvalid`` says what is wrong."""
        try:
            return self._parse(extract_json(text))
        except RecursionError:  # an answer nested deeper than validating it can go
            raise OutputInvalid(["the answer is nested too deeply"]) from None

    def _parse(self, raw: str) -> Any:
        if self.model is not None:
            try:
                return self.model.model_validate_json(raw).model_dump(mode="json")
            except ValidationError as exc:
                raise OutputInvalid(_pydantic_problems(exc)) from None
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise OutputInvalid([f"the answer is not JSON ({exc})"]) from None
        if self._validator is not None:
            from referencing.exceptions import Unresolvable

            try:
                errors = sorted(self._validator.iter_errors(value), key=lambda e: str(e.path))
            except Unresolvable as exc:
                raise ConfigurationError(
                    f"the output schema has a broken reference: {exc}"
                ) from exc
            if errors:
                raise OutputInvalid([_said(error) for error in errors[:MAX_PROBLEMS]])
        return value

    def instruction(self) -> str:
        """What the model is told about its final answer."""
        schema = json.dumps(self.json_schema, ensure_ascii=False, sort_keys=True)
        return (
            "When you give your final answer, reply with one JSON value that matches this "
            f"JSON Schema, and nothing else:\n{schema}"
        )

    @staticmethod
    def correction(problems: list[str]) -> str:
        """The corrective re-prompt after an answer that did not match."""
        return (
            "Your answer does not match the required JSON Schema: "
            + "; ".join(problems)
            + ". Reply again with only the corrected JSON value."
        )


def extract_json(text: str) -> str:
    """The JSON in ``text``: a fenced block's content, else the span from the first
    ``{`` or ``[`` to the matching last bracket, else the text itself."""
    stripped = text.strip()
    fenced = _FENCED.search(stripped)
    if fenced:
        return fenced.group(1)
    if stripped[:1] in '{["' or not stripped:
        return stripped
    for opening, closing in (("{", "}"), ("[", "]")):
        start, end = stripped.find(opening), stripped.rfind(closing)
        if 0 <= start < end:
            return stripped[start : end + 1]
    return stripped


def _said(error: schema_errors.ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path)
    return _clip(f"{where or 'the answer'}: {error.message}")


def _pydantic_problems(exc: ValidationError) -> list[str]:
    return [
        _clip(f"{'/'.join(str(p) for p in err['loc']) or 'the answer'}: {err['msg']}")
        for err in exc.errors()[:MAX_PROBLEMS]
    ]


def _clip(text: str) -> str:
    return text if len(text) <= PROBLEM_CHARS else f"{text[: PROBLEM_CHARS - 1]}…"
