"""What every dataset file reader shares: its error, its result, its messages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from agents_core.evals.contracts import Case

Format = Literal["jsonl", "csv", "adk"]


class DatasetFormatError(Exception):
    """A dataset file that cannot be read: the message says where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """The cases of a file, and the name and description it gives its set (ADK does)."""

    cases: list[Case]
    format: Format
    name: str | None = None
    description: str = ""
    notes: list[str] = field(default_factory=list)


def validation_message(exc: ValidationError) -> str:
    """The first problems of a pydantic error as ``loc: message``, joined by ``; ``."""
    errors = exc.errors()
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error["loc"])
        said = plain_message(error)
        parts.append(f"{where}: {said}" if where else said)
    more = len(errors) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def case_from(value: object, where: str) -> Case:
    """``value`` as a ``Case``, or a ``DatasetFormatError`` that starts with ``where``."""
    try:
        return Case.model_validate(value)
    except ValidationError as exc:
        raise DatasetFormatError(f"{where}: {validation_message(exc)}") from None


def plain_message(error: ErrorDetails) -> str:
    """pydantic's message for one problem of a case, in its author's words (a file's
    or an API caller's): a nested contract that is not an object reads "should be a
    JSON object", not "a valid dictionary or instance of CaseInput" (a class they
    never see)."""
    if error["type"] == "model_type":
        return "Input should be a JSON object"
    return error["msg"]
