"""Structural differences between two JSON values: which paths were added, removed or
changed. Objects are compared key by key and arrays index by index; a value whose type
changes (an object that became a string) is one change at its path. ``patch`` applies
the changes to the first value and gives the second, which the tests use to show that
nothing is lost.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Op = Literal["added", "removed", "changed"]
PathItem = str | int
Path = tuple[PathItem, ...]

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True, slots=True)
class Change:
    """One difference at ``path``: ``before`` is absent (``None``) for an added value,
    ``after`` for a removed one."""

    path: Path
    op: Op
    before: Any = None
    after: Any = None

    def swapped(self) -> Change:
        """The same difference seen from the other side."""
        op: Op = {"added": "removed", "removed": "added", "changed": "changed"}[self.op]  # type: ignore[assignment]
        return Change(self.path, op, self.after, self.before)

    @property
    def where(self) -> str:
        return path_text(self.path)


def path_text(path: Sequence[PathItem]) -> str:
    """``args.items[2]["a key"]``: a path as people read it; the root is ``(value)``."""
    if not path:
        return "(value)"
    written = ""
    for item in path:
        if isinstance(item, int):
            written += f"[{item}]"
        elif _PLAIN_KEY.match(item):
            written += f".{item}" if written else item
        else:
            written += '["' + item.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return written


def diff(before: Any, after: Any) -> list[Change]:
    """The changes that turn ``before`` into ``after``, in path order; none when equal."""
    found: list[Change] = []
    _diff(before, after, (), found)
    return found


def _same(a: Any, b: Any) -> bool:
    # JSON has no booleans among its numbers: true is not 1 (but 1 is 1.0).
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _diff(a: Any, b: Any, path: Path, found: list[Change]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                found.append(Change((*path, key), "removed", before=a[key]))
            else:
                _diff(a[key], b[key], (*path, key), found)
        found.extend(Change((*path, key), "added", after=b[key]) for key in b if key not in a)
    elif isinstance(a, list) and isinstance(b, list):
        for index in range(min(len(a), len(b))):
            _diff(a[index], b[index], (*path, index), found)
        found.extend(Change((*path, i), "removed", before=a[i]) for i in range(len(b), len(a)))
        found.extend(Change((*path, i), "added", after=b[i]) for i in range(len(a), len(b)))
    elif not _same(a, b):
        found.append(Change(path, "changed", a, b))


def patch(value: Any, changes: Sequence[Change]) -> Any:
    """``value`` with ``changes`` (from ``diff(value, other)``) applied: ``other``.
    Removals from an array go last to first, so each index still means what it did."""
    result = _copy(value)
    removals = sorted(
        (c for c in changes if c.op == "removed"),
        key=lambda c: c.path[-1] if isinstance(c.path[-1], int) else 0,
        reverse=True,
    )
    for change in [c for c in changes if c.op != "removed"] + removals:
        result = _apply(result, change)
    return result


def _apply(root: Any, change: Change) -> Any:
    if not change.path:
        return _copy(change.after)
    parent = root
    for item in change.path[:-1]:
        parent = parent[item]
    last = change.path[-1]
    if change.op == "removed":
        del parent[last]
    elif change.op == "added" and isinstance(parent, list):
        parent.insert(last, _copy(change.after))  # type: ignore[arg-type]
    else:
        parent[last] = _copy(change.after)
    return root


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
