"""Properties of the run diff (``studio.diffs``) over generated runs and JSON values: a
run compared with itself (or with a copy under new ids) has no difference; comparing
the other way round mirrors the diff (added and removed swap, nothing else moves); every
step of each run appears once, in order; a step inserted shows as exactly one added
step; a JSON diff applied gives the other value; a text diff reads as either text."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.diffs.compare import RunDiff, RunRecord, compare
from studio.diffs.json_diff import diff, patch
from studio.diffs.steps import steps_of
from studio.diffs.text import side, text_diff
from tests.studio.diff_events import Script

AGENTS = st.sampled_from(["root", "root.helper"])  # paths below one root, as in a run
WORDS = st.sampled_from(["a", "b", "hello", "42", "Oslo", ""])
SMALL_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["x", "y", ""]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
    ),
    max_leaves=8,
)
STEP = st.one_of(
    st.tuples(st.just("say"), AGENTS, WORDS),
    st.tuples(st.just("call"), AGENTS, st.sampled_from(["add", "search"]), SMALL_JSON, WORDS),
    st.tuples(st.just("error"), AGENTS, WORDS),
)
RUN = st.lists(STEP, max_size=8)


def script(steps: list[tuple[Any, ...]], *, offset: int = 0) -> Script:
    run = Script(offset=offset).user("go")
    for step in steps:
        match step:
            case ("say", agent, text):
                run.say(text, agent=agent)
            case ("call", agent, tool, args, result):
                run.call(tool, {"value": args}, result, agent=agent)
            case ("error", agent, code):
                run.error(code or "failed", "it failed", agent=agent)
    return run


def record(steps: list[tuple[Any, ...]], *, offset: int = 0) -> RunRecord:
    return RunRecord(script(steps, offset=offset).events)


def shape(result: RunDiff) -> list[tuple[str, int | None, int | None, frozenset[Any]]]:
    """A diff as its rows' statuses, the seqs of their steps and their changes."""
    return [
        (
            row.status,
            None if row.a is None else row.a.seq,
            None if row.b is None else row.b.seq,
            frozenset((c.path, c.op, repr(c.before), repr(c.after)) for c in row.changes),
        )
        for row in result.rows
    ]


@given(RUN)
@settings(deadline=None)  # a shared machine: an example may take a while, none hangs
def test_a_run_compared_with_itself_or_a_copy_under_new_ids_is_identical(run: list[Any]) -> None:
    for other in (record(run), record(run, offset=100)):
        result = compare(record(run), other)
        assert result.identical
        assert {row.status for row in result.rows} <= {"same"}
        assert result.answer == [] and result.state_changes == []


@given(RUN, RUN)
@settings(max_examples=200, deadline=None)
def test_comparing_the_other_way_round_mirrors_the_diff(a: list[Any], b: list[Any]) -> None:
    forward, backward = compare(record(a), record(b)), compare(record(b), record(a))
    assert shape(backward) == shape(forward.swapped())
    counts, mirrored = forward.counts, backward.counts
    assert (counts["added"], counts["removed"]) == (mirrored["removed"], mirrored["added"])
    assert (counts["same"], counts["changed"]) == (mirrored["same"], mirrored["changed"])


@given(RUN, RUN)
@settings(deadline=None)
def test_every_step_of_each_run_appears_once_in_order(a: list[Any], b: list[Any]) -> None:
    result = compare(record(a), record(b))
    for which, steps in (("a", steps_of(script(a).events)), ("b", steps_of(script(b).events))):
        shown = [getattr(row, which) for row in result.rows if getattr(row, which) is not None]
        assert [step.seq for step in shown] == [step.seq for step in steps]
    for row in result.rows:
        if row.a is not None and row.b is not None:
            assert row.a.key == row.b.key
            assert (row.status == "same") == (row.a.content == row.b.content)
            assert patch(row.a.content, list(row.changes)) == row.b.content


@given(RUN, st.integers(0, 8), STEP)
@settings(deadline=None)
def test_one_inserted_step_shows_as_added_and_nothing_else(
    run: list[Any], where: int, extra: tuple[Any, ...]
) -> None:
    longer = [*run[:where], extra, *run[where:]]
    result = compare(record(run), record(longer))
    added = len(steps_of(script([extra]).events)) - 1  # a call adds its reply and its call
    assert result.counts["added"] == added
    assert result.counts["removed"] == result.counts["changed"] == 0


@given(SMALL_JSON, SMALL_JSON)
@settings(deadline=None)
def test_a_json_diff_applied_gives_the_other_value_and_mirrors(a: Any, b: Any) -> None:
    changes = diff(a, b)
    assert patch(a, changes) == b
    assert diff(a, a) == []
    backward = {(c.path, c.op, repr(c.before), repr(c.after)) for c in diff(b, a)}
    assert backward == {
        (c.path, c.op, repr(c.before), repr(c.after)) for c in (x.swapped() for x in changes)
    }


@given(st.text(max_size=60), st.text(max_size=60))
@settings(deadline=None)
def test_a_text_diff_reads_as_either_text(a: str, b: str) -> None:
    segments = text_diff(a, b)
    assert side(segments, "before") == a
    assert side(segments, "after") == b
    assert all(segment.text for segment in segments)
