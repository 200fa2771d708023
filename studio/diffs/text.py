"""A word-level difference between two texts (final answers, tool results), as segments
to show in a row: kept, deleted (only in the first) and inserted (only in the second).
Joining the kept and deleted segments gives the first text; the kept and inserted ones,
the second."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Literal

SegmentOp = Literal["equal", "delete", "insert"]

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")
"""Whitespace runs, words and single punctuation marks: the units compared."""
MAX_UNITS = 20_000
"""Longer texts are compared line by line instead (a word diff is quadratic at worst)."""


@dataclass(frozen=True, slots=True)
class Segment:
    op: SegmentOp
    text: str


def text_diff(before: str, after: str) -> list[Segment]:
    """The segments that turn ``before`` into ``after``; adjacent ones of one kind are
    merged, and empty texts give no segments."""
    a, b = _WORDS.findall(before), _WORDS.findall(after)
    if len(a) > MAX_UNITS or len(b) > MAX_UNITS:
        a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    segments: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            _add(segments, "equal", "".join(a[i1:i2]))
            continue
        _add(segments, "delete", "".join(a[i1:i2]))
        _add(segments, "insert", "".join(b[j1:j2]))
    return segments


def _add(segments: list[Segment], op: SegmentOp, text: str) -> None:
    if not text:
        return
    if segments and segments[-1].op == op:
        segments[-1] = Segment(op, segments[-1].text + text)
    else:
        segments.append(Segment(op, text))


def side(segments: list[Segment], which: Literal["before", "after"]) -> str:
    """The text one side of ``segments`` reads: ``before`` or ``after``."""
    skip: SegmentOp = "insert" if which == "before" else "delete"
    return "".join(segment.text for segment in segments if segment.op != skip)
