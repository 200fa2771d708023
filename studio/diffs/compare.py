"""Two runs compared: their steps aligned (``align``), what changed in each paired step
(``json_diff``), the state each left behind, their final answers word by word (``text``)
and their figures side by side. Pure: it reads the events and figures it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Literal, cast

from agents_core import events as core_events
from studio import costs
from studio.diffs.align import align
from studio.diffs.json_diff import Change, diff
from studio.diffs.steps import MESSAGE, TOOL, Step, final_answer, steps_of
from studio.diffs.text import Segment, text_diff

Status = Literal["same", "changed", "added", "removed"]
STATUSES: tuple[Status, ...] = ("same", "changed", "added", "removed")
_MIRROR: dict[Status, Status] = {
    "same": "same",
    "changed": "changed",
    "added": "removed",
    "removed": "added",
}


@dataclass(frozen=True, slots=True)
class RunFigures:
    """What a run used: tokens, cost (a ``costs.Total``), where its time went (ms;
    ``None`` while it runs)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: costs.Total = field(default_factory=lambda: costs.total([]))
    wall_ms: float | None = None
    model_ms: float | None = None
    tools_ms: float | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as the diff reads it: its stored events in seq order, and its figures."""

    events: Sequence[core_events.Event]
    figures: RunFigures = field(default_factory=RunFigures)
    truncated: bool = False
    """Only its first events are here (``studio.diffs.reads.MAX_EVENTS``)."""


@dataclass(frozen=True, slots=True)
class Row:
    """One line of the aligned runs: a step of ``a``, of ``b``, or of both."""

    status: Status
    a: Step | None
    b: Step | None
    changes: tuple[Change, ...] = ()

    @property
    def step(self) -> Step:
        """The step this row is about (``a``'s unless only ``b`` has one)."""
        # Never both None: every row holds a step of one run at least (``_row``).
        return self.a if self.a is not None else cast("Step", self.b)

    def swapped(self) -> Row:
        changes = tuple(change.swapped() for change in self.changes)
        return Row(_MIRROR[self.status], self.b, self.a, changes)


@dataclass(frozen=True, slots=True)
class Figure:
    """One figure of both runs; ``delta`` is ``b`` minus ``a`` when both are known."""

    name: str
    a: int | float | None
    b: int | float | None

    @property
    def delta(self) -> int | float | None:
        if self.a is None or self.b is None:
            return None
        return self.b - self.a

    def swapped(self) -> Figure:
        return Figure(self.name, self.b, self.a)


@dataclass(frozen=True, slots=True)
class CostFigure:
    """Both runs' costs; ``delta`` (``b`` minus ``a``) only when both are known, in one
    currency: unknown is never zero."""

    a: costs.Total
    b: costs.Total

    @property
    def delta(self) -> Decimal | None:
        if self.a.amount is None or self.b.amount is None or self.a.currency != self.b.currency:
            return None
        return self.b.amount - self.a.amount

    @property
    def complete(self) -> bool:
        return self.a.complete and self.b.complete


@dataclass(frozen=True, slots=True)
class RunDiff:
    rows: list[Row]
    state_a: dict[str, Any]
    state_b: dict[str, Any]
    """The state each run changed: its deltas merged in order (``None``: removed)."""
    state_changes: list[Change]
    answer_a: str | None
    answer_b: str | None
    answer: list[Segment]
    """The final answers word by word (empty when both are the same or missing)."""
    figures: list[Figure]
    cost: CostFigure
    truncated: bool = False

    @property
    def counts(self) -> dict[Status, int]:
        found = dict.fromkeys(STATUSES, 0)
        for row in self.rows:
            found[row.status] += 1
        return found

    @property
    def identical(self) -> bool:
        """Nothing but figures differ: every step the same, the same state and answer."""
        return all(row.status == "same" for row in self.rows) and not self.state_changes

    def swapped(self) -> RunDiff:
        """The diff of ``b`` with ``a``."""
        return replace(
            self,
            rows=[row.swapped() for row in self.rows],
            state_a=self.state_b,
            state_b=self.state_a,
            state_changes=[change.swapped() for change in self.state_changes],
            answer_a=self.answer_b,
            answer_b=self.answer_a,
            answer=[_mirrored(segment) for segment in self.answer],
            figures=[figure.swapped() for figure in self.figures],
            cost=CostFigure(self.cost.b, self.cost.a),
        )


def _mirrored(segment: Segment) -> Segment:
    ops = {"equal": "equal", "delete": "insert", "insert": "delete"}
    return Segment(ops[segment.op], segment.text)  # type: ignore[arg-type]


def compare(a: RunRecord, b: RunRecord) -> RunDiff:
    """The diff of run ``a`` (the baseline) and run ``b``."""
    steps_a, steps_b = steps_of(a.events), steps_of(b.events)
    pairs = align([step.item() for step in steps_a], [step.item() for step in steps_b])
    rows = [
        _row(None if i is None else steps_a[i], None if j is None else steps_b[j]) for i, j in pairs
    ]
    state_a, state_b = state_delta(a.events), state_delta(b.events)
    answer_a, answer_b = final_answer(a.events), final_answer(b.events)
    answer = [] if answer_a == answer_b else text_diff(answer_a or "", answer_b or "")
    return RunDiff(
        rows=rows,
        state_a=state_a,
        state_b=state_b,
        state_changes=diff(state_a, state_b),
        answer_a=answer_a,
        answer_b=answer_b,
        answer=answer,
        figures=_figures(a, b, steps_a, steps_b),
        cost=CostFigure(a.figures.cost, b.figures.cost),
        truncated=a.truncated or b.truncated,
    )


def _row(a: Step | None, b: Step | None) -> Row:
    if a is None:
        return Row("added", None, b)
    if b is None:
        return Row("removed", a, None)
    if a.fingerprint == b.fingerprint:
        return Row("same", a, b)
    return Row("changed", a, b, tuple(diff(a.content, b.content)))


def state_delta(events: Sequence[core_events.Event]) -> dict[str, Any]:
    """What a run's events changed of its session's state, merged in order; a key it
    removed has ``None``."""
    merged: dict[str, Any] = {}
    for event in events:
        merged.update(event.actions.state_delta)
    return merged


def _figures(a: RunRecord, b: RunRecord, steps_a: list[Step], steps_b: list[Step]) -> list[Figure]:
    fa, fb = a.figures, b.figures
    return [
        Figure("input_tokens", fa.input_tokens, fb.input_tokens),
        Figure("output_tokens", fa.output_tokens, fb.output_tokens),
        Figure("wall_ms", fa.wall_ms, fb.wall_ms),
        Figure("model_ms", fa.model_ms, fb.model_ms),
        Figure("tools_ms", fa.tools_ms, fb.tools_ms),
        Figure("steps", len(steps_a), len(steps_b)),
        Figure("model_calls", _count(steps_a, MESSAGE), _count(steps_b, MESSAGE)),
        Figure("tool_calls", _count(steps_a, TOOL), _count(steps_b, TOOL)),
    ]


def _count(steps: list[Step], kind: str) -> int:
    return sum(1 for step in steps if step.kind == kind)


def string_segments(change: Change) -> list[Segment] | None:
    """A changed text, word by word: ``None`` unless both sides are strings."""
    if change.op != "changed" or not isinstance(change.before, str):
        return None
    if not isinstance(change.after, str):
        return None
    return text_diff(change.before, change.after)
