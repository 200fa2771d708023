"""Aligning two sequences of steps by what they are, not where they are.

Each item has a key (what it is: the agent that took the step and its kind) and a
fingerprint (what it said or did). Only items with equal keys are paired; the alignment
maximises the pairs' weight, ``IDENTICAL`` for a pair with equal fingerprints and
``CHANGED`` for one whose fingerprints differ (a weighted longest common subsequence,
Needleman-Wunsch with free gaps). So three shifted steps show as one removed, two
identical and one added rather than three changed, and a step inserted in the middle
leaves every other step paired with its counterpart.

The choice between equally good alignments depends only on the items, never on which
side they are: aligning ``b`` with ``a`` gives exactly the mirror of aligning ``a`` with
``b``. Sequences too long for the table (``MAX_CELLS``) are aligned on their keys by
``difflib.SequenceMatcher`` instead, which is fast but does not promise that symmetry.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

IDENTICAL = 2
CHANGED = 1
MAX_CELLS = 400_000
"""The most cells of the alignment table (steps of one run times the other's, after the
identical head and tail are set aside) aligned exactly: about a second of work."""


@dataclass(frozen=True, slots=True)
class Item:
    """What the alignment sees of a step. ``order`` ranks items for the tie-break."""

    key: tuple[str, ...]
    fingerprint: str

    @property
    def order(self) -> tuple[tuple[str, ...], str]:
        return self.key, self.fingerprint


Pair = tuple[int | None, int | None]
"""``(i, j)``: ``a[i]`` paired with ``b[j]``; ``(i, None)`` only in ``a``; ``(None, j)``
only in ``b``."""


def align(a: Sequence[Item], b: Sequence[Item]) -> list[Pair]:
    """The alignment of ``a`` and ``b``, in order: every index of each appears once."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    if len(middle_a) * len(middle_b) > MAX_CELLS:
        middle = _by_keys(middle_a, middle_b)
    else:
        middle = _weighted(middle_a, middle_b)
    pairs: list[Pair] = [(i, i) for i in range(head)]
    pairs += [(_shift(i, head), _shift(j, head)) for i, j in middle]
    pairs += [(len(a) - tail + k, len(b) - tail + k) for k in range(tail)]
    return pairs


def _shift(index: int | None, by: int) -> int | None:
    return None if index is None else index + by


def _weighted(a: Sequence[Item], b: Sequence[Item]) -> list[Pair]:
    """The best alignment by weight; ``best[i][j]`` is the best of ``a[i:]``, ``b[j:]``."""
    n, m = len(a), len(b)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = best[i], best[i + 1]
        for j in range(m - 1, -1, -1):
            score = max(below[j], row[j + 1])
            if a[i].key == b[j].key:
                score = max(score, _weight(a[i], b[j]) + below[j + 1])
            row[j] = score
    return _trace(a, b, best)


def _weight(x: Item, y: Item) -> int:
    return IDENTICAL if x.fingerprint == y.fingerprint else CHANGED


def _trace(a: Sequence[Item], b: Sequence[Item], best: list[list[int]]) -> list[Pair]:
    """Walk the table from the start: pair when pairing is best; otherwise leave out the
    item that ranks lower of the two (either side), so the walk mirrors when swapped."""
    pairs: list[Pair] = []
    i = j = 0
    while i < len(a) and j < len(b):
        here = best[i][j]
        if a[i].key == b[j].key and here == _weight(a[i], b[j]) + best[i + 1][j + 1]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
            continue
        skip_a, skip_b = best[i + 1][j] == here, best[i][j + 1] == here
        if skip_a and (not skip_b or a[i].order <= b[j].order):
            pairs.append((i, None))
            i += 1
        else:
            pairs.append((None, j))
            j += 1
    pairs += [(k, None) for k in range(i, len(a))]
    pairs += [(None, k) for k in range(j, len(b))]
    return pairs


def _by_keys(a: Sequence[Item], b: Sequence[Item]) -> list[Pair]:
    keys_a: list[Hashable] = [item.key for item in a]
    keys_b: list[Hashable] = [item.key for item in b]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    pairs: list[Pair] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        else:
            pairs += [(i, None) for i in range(i1, i2)]
            pairs += [(None, j) for j in range(j1, j2)]
    return pairs
