"""Errors of Studio's use cases. The API's exception handler translates them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Path = tuple[str | int, ...]


class StudioError(Exception):
    """A use case refused: ``code`` is a stable snake_case identifier."""

    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConflictError(StudioError):
    """The request is valid but the objects are in the wrong state for it."""

    code = "conflict"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class LimitError(StudioError):
    """The request is valid but would go over a configured limit; retry later."""

    code = "limit_reached"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with an input, at ``path`` inside it."""

    path: Path
    code: str
    message: str


class InvalidInputError(StudioError):
    """Input that cannot be used; every problem carries its path inside ``field``."""

    code = "invalid"

    def __init__(self, field: str, problems: Sequence[Problem]) -> None:
        first = problems[0] if problems else Problem((), "invalid", "invalid")
        where = ".".join(str(p) for p in (field, *first.path))
        super().__init__(f"{where}: {first.message}")
        self.field = field
        self.problems = list(problems)
