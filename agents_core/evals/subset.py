"""JSON subset matching: does an actual value hold at least what an expected one says?

Used for a tool call's arguments (``ExpectedToolCall.args``) and for the session state
a case expects (``Expectation.state``):

- objects: every key of the expected object is in the actual one, with a value that
  matches recursively; the actual object may have more keys;
- arrays: the same length, each element matching the one at the same index (an array
  is a value, not a bag: ``[1]`` does not match ``[1, 2]``);
- scalars: equal as JSON values: ``1`` matches ``1.0``, but ``true`` never matches
  ``1`` and ``null`` matches only ``null``.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_subset", "subset_difference"]

PathItem = str | int
_SHOWN = 80


def json_subset(expected: Any, actual: Any) -> bool:
    """``True`` when ``actual`` holds everything ``expected`` says (see the module)."""
    return subset_difference(expected, actual) is None


def subset_difference(expected: Any, actual: Any) -> str | None:
    """The first place ``actual`` does not hold what ``expected`` says, in words (e.g.
    ``at city: expected "Paris", got "Oslo"``); ``None`` when it is a subset."""
    return _difference(expected, actual, ())


def _difference(expected: Any, actual: Any, path: tuple[PathItem, ...]) -> str | None:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return _mismatch(path, expected, actual)
        return _object_difference(expected, actual, path)
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return _mismatch(path, expected, actual)
        return _array_difference(expected, actual, path)
    return None if _same_scalar(expected, actual) else _mismatch(path, expected, actual)


def _object_difference(
    expected: dict[Any, Any], actual: dict[Any, Any], path: tuple[PathItem, ...]
) -> str | None:
    for key, value in expected.items():
        if key not in actual:
            return f"{_where((*path, key))}: missing (expected {shown(value)})"
        found = _difference(value, actual[key], (*path, key))
        if found is not None:
            return found
    return None


def _array_difference(
    expected: list[Any], actual: list[Any], path: tuple[PathItem, ...]
) -> str | None:
    if len(expected) != len(actual):
        got = f"{len(actual)} ({shown(actual)})"
        return f"{_where(path)}: expected {len(expected)} item(s), got {got}"
    for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
        found = _difference(want, got, (*path, index))
        if found is not None:
            return found
    return None


def _same_scalar(expected: Any, actual: Any) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return expected == actual
    return type(expected) is type(actual) and bool(expected == actual)


def _mismatch(path: tuple[PathItem, ...], expected: Any, actual: Any) -> str:
    return f"{_where(path)}: expected {shown(expected)}, got {shown(actual)}"


def _where(path: tuple[PathItem, ...]) -> str:
    if not path:
        return "at the top"
    return "at " + "".join(
        f"[{item}]" if isinstance(item, int) else (f".{item}" if i else item)
        for i, item in enumerate(path)
    )


def shown(value: Any, limit: int = _SHOWN) -> str:
    """``value`` as short JSON text, for a verdict's detail."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except ValueError:  # a circular value
        text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}…"
