"""The diff of two runs (``studio.diffs``), on events written by hand: which steps pair
up, what counts as changed, the JSON and text differences, the state and the figures."""

from __future__ import annotations

from decimal import Decimal

from studio import costs
from studio.diffs.align import Item, align
from studio.diffs.compare import RunFigures, RunRecord, compare, string_segments
from studio.diffs.json_diff import Change, diff, patch, path_text
from studio.diffs.steps import MESSAGE, TOOL, steps_of
from studio.diffs.text import Segment, side, text_diff
from tests.studio.diff_events import Script


def weather(city: str, result: str, answer: str) -> Script:
    return (
        Script()
        .user(f"Weather in {city}?")
        .start()
        .call("weather", {"city": city, "units": "C"}, result)
        .say(answer, state={"last_city": city})
        .end()
    )


def record(script: Script, **figures: object) -> RunRecord:
    return RunRecord(script.events, RunFigures(**figures))  # type: ignore[arg-type]


# JSON differences


def test_json_diff_names_each_added_removed_and_changed_path() -> None:
    before = {"city": "Oslo", "opts": {"units": "C", "days": [1, 2, 3]}, "gone": True}
    after = {"city": "Bergen", "opts": {"units": "C", "days": [1, 5]}, "new": None}
    changes = diff(before, after)
    assert changes == [
        Change(("city",), "changed", "Oslo", "Bergen"),
        Change(("opts", "days", 1), "changed", 2, 5),
        Change(("opts", "days", 2), "removed", before=3),
        Change(("gone",), "removed", before=True),
        Change(("new",), "added", after=None),
    ]
    assert patch(before, changes) == after
    assert before["opts"] == {"units": "C", "days": [1, 2, 3]}  # patch copies


def test_json_diff_tells_true_from_one_and_a_type_change_is_one_change() -> None:
    assert diff({"a": True}, {"a": 1}) == [Change(("a",), "changed", True, 1)]
    assert diff({"a": 1}, {"a": 1.0}) == []
    assert diff({"a": {"b": 1}}, {"a": "b"}) == [Change(("a",), "changed", {"b": 1}, "b")]
    assert diff([1], {"0": 1}) == [Change((), "changed", [1], {"0": 1})]


def test_paths_read_as_written_in_code() -> None:
    assert path_text(("args", "items", 2, "name")) == "args.items[2].name"
    assert path_text(("result", "a key", 0)) == 'result["a key"][0]'
    assert path_text((0, 'say "hi"')) == '[0]["say \\"hi\\""]'
    assert path_text(()) == "(value)"


# Text differences


def test_text_diff_marks_the_words_that_changed() -> None:
    segments = text_diff("It is 12 degrees in Oslo.", "It is 14 degrees in Oslo today.")
    assert segments == [
        Segment("equal", "It is "),
        Segment("delete", "12"),
        Segment("insert", "14"),
        Segment("equal", " degrees in Oslo"),
        Segment("insert", " today"),
        Segment("equal", "."),
    ]
    assert side(segments, "before") == "It is 12 degrees in Oslo."
    assert side(segments, "after") == "It is 14 degrees in Oslo today."


# Alignment


def items(*keys: str) -> list[Item]:
    return [Item((key.rstrip("'"),), key) for key in keys]


def test_a_step_inserted_in_the_middle_leaves_the_others_paired() -> None:
    pairs = align(items("u", "m", "t", "m2"), items("u", "m", "x", "t", "m2"))
    assert pairs == [(0, 0), (1, 1), (None, 2), (2, 3), (3, 4)]


def test_shifted_steps_pair_with_their_equals_not_their_positions() -> None:
    # b drops a's first tool call and adds one at the end: not three changed calls.
    a = [Item(("tool",), "a"), Item(("tool",), "b"), Item(("tool",), "c")]
    b = [Item(("tool",), "b"), Item(("tool",), "c"), Item(("tool",), "d")]
    assert align(a, b) == [(0, None), (1, 0), (2, 1), (None, 2)]


def test_steps_of_different_kinds_never_pair() -> None:
    assert align(items("m"), items("t")) == [(0, None), (None, 0)]


def test_steps_of_the_same_kind_with_other_content_pair_as_changed() -> None:
    assert align(items("u", "m", "t"), items("u", "m'", "t")) == [(0, 0), (1, 1), (2, 2)]


# Steps


def test_a_tool_call_and_its_result_are_one_step_and_bookkeeping_is_none() -> None:
    steps = steps_of(weather("Oslo", '{"temp": 12}', "12 degrees").events)
    assert [(step.kind, step.tool) for step in steps] == [
        ("user_message", ""),
        (MESSAGE, ""),
        (TOOL, "weather"),
        (MESSAGE, ""),
    ]
    tool = steps[2]
    assert tool.content == {"args": {"city": "Oslo", "units": "C"}, "result": {"temp": 12}}
    assert (tool.seq, tool.result_seq, tool.author, tool.branch) == (3, 4, "root", "root")
    assert tool.latency_ms == 4_000  # from the call's start to its result
    assert steps[1].content == {"calls": ["weather"]}
    assert (steps[3].input_tokens, steps[3].output_tokens, steps[3].latency_ms) == (10, 5, 100.0)


def test_a_tool_steps_time_is_what_the_tool_took_to_run_as_the_timeline_says() -> None:
    run = Script().user("Weather in Oslo?").start()
    run.call("weather", {"city": "Oslo"}, "sunny", ran_ms=2.5).say("Sunny.").end()
    (tool,) = [step for step in steps_of(run.events) if step.kind == TOOL]
    assert tool.latency_ms == 2.5  # not the 4 s from its start to the stored response


def test_ids_seqs_and_times_never_make_a_step_differ() -> None:
    one = weather("Oslo", "sunny", "Sunny.")
    run_b = Script(offset=40)  # another invocation, later seqs and times, new call ids
    run_b.user("Weather in Oslo?").start().start("root")  # one more bookkeeping event
    run_b.call("weather", {"units": "C", "city": "Oslo"}, "sunny")
    run_b.say("Sunny.", tokens=(99, 1), latency_ms=9.0, state={"last_city": "Oslo"}).end()
    result = compare(record(one), record(run_b))
    assert result.identical
    assert result.counts == {"same": 4, "changed": 0, "added": 0, "removed": 0}


# Two runs


def test_an_edited_tool_result_changes_that_step_and_those_after_it() -> None:
    before = weather("Oslo", '{"temp": 12, "sky": "clear"}', "It is 12 degrees and clear.")
    after = weather("Oslo", '{"temp": 14, "sky": "clear"}', "It is 14 degrees and clear.")
    result = compare(record(before), record(after))
    assert [row.status for row in result.rows] == ["same", "same", "changed", "changed"]
    tool, answer = result.rows[2], result.rows[3]
    assert tool.changes == (Change(("result", "temp"), "changed", 12, 14),)
    text_change = answer.changes[0]
    assert text_change.path == ("parts", 0, "text")
    assert string_segments(text_change) == [
        Segment("equal", "It is "),
        Segment("delete", "12"),
        Segment("insert", "14"),
        Segment("equal", " degrees and clear."),
    ]
    assert (result.answer_a, result.answer_b) == (
        "It is 12 degrees and clear.",
        "It is 14 degrees and clear.",
    )
    assert side(result.answer, "after") == "It is 14 degrees and clear."
    assert not result.identical


def test_another_tool_and_an_error_show_as_removed_and_added_steps() -> None:
    a = weather("Oslo", "sunny", "Sunny.")
    b = Script().user("Weather in Oslo?").start()
    b.call("forecast", {"city": "Oslo"}, "rain").error("model_error", "the model failed").end()
    result = compare(record(a), record(b))
    summary = [(row.status, row.step.kind, row.step.tool) for row in result.rows]
    assert summary == [
        ("same", "user_message", ""),
        ("changed", MESSAGE, ""),  # it called another tool
        # Between two paired steps, the unpaired ones go in an order of their own (by
        # kind), whichever run is the first: the diff of b and a mirrors this one.
        ("added", TOOL, "forecast"),
        ("added", "error", ""),
        ("removed", TOOL, "weather"),
        ("removed", MESSAGE, ""),
    ]
    assert result.rows[1].changes == (Change(("calls", 0), "changed", "weather", "forecast"),)
    assert result.rows[3].b is not None
    assert result.rows[3].b.content == {
        "error": {"code": "model_error", "message": "the model failed", "failure": "terminal"}
    }
    assert result.counts == {"same": 1, "changed": 1, "added": 2, "removed": 2}
    assert (result.answer_a, result.answer_b) == ("Sunny.", None)


def test_a_sub_agents_steps_pair_by_its_path() -> None:
    a = Script().user("go").call("lookup", {"q": "x"}, "1", agent="root.helper").say("done")
    b = Script().user("go").call("lookup", {"q": "x"}, "1", agent="root.other").say("done")
    rows = compare(record(a), record(b)).rows
    assert [row.status for row in rows] == ["same", "removed", "removed", "added", "added", "same"]
    assert rows[3].step.key == ("other", "(root).other", MESSAGE, "")


def test_two_agents_steps_pair_below_their_roots() -> None:
    # A duplicate of an agent under another name: its steps pair with the original's.
    a = Script().user("go").call("lookup", {"q": "x"}, "1", agent="calc.helper")
    a.say("5", agent="calc")
    b = Script().user("go").call("lookup", {"q": "x"}, "1", agent="calc2.helper")
    b.say("6", agent="calc2")
    rows = compare(record(a), record(b)).rows
    assert [row.status for row in rows] == ["same", "same", "same", "changed"]
    assert rows[3].a is not None and rows[3].b is not None
    assert (rows[3].a.author, rows[3].b.author) == ("calc", "calc2")
    assert rows[3].a.key == rows[3].b.key == ("(root)", "(root)", MESSAGE, "")


def test_state_deltas_are_merged_per_run_and_compared() -> None:
    a = Script().user("hi").say("a", state={"n": 1, "city": "Oslo"}).say("b", state={"n": 2})
    b = Script().user("hi").say("a", state={"n": 1}).say("b", state={"n": 3, "tmp": None})
    result = compare(record(a), record(b))
    assert result.state_a == {"n": 2, "city": "Oslo"}
    assert result.state_b == {"n": 3, "tmp": None}
    assert result.state_changes == [
        Change(("n",), "changed", 2, 3),
        Change(("city",), "removed", before="Oslo"),
        Change(("tmp",), "added", after=None),
    ]


def test_figures_sit_side_by_side_with_their_differences() -> None:
    a = record(
        weather("Oslo", "1", "x"),
        input_tokens=100,
        output_tokens=20,
        cost=costs.Total(Decimal("0.0012"), "USD", complete=True),
        wall_ms=1500.0,
    )
    b = record(
        weather("Oslo", "1", "x").call("weather", {"city": "Rome"}, "2"),
        input_tokens=130,
        output_tokens=15,
        cost=costs.Total(Decimal("0.0020"), "USD", complete=False),
        wall_ms=None,
    )
    result = compare(a, b)
    figures = {figure.name: (figure.a, figure.b, figure.delta) for figure in result.figures}
    assert figures["input_tokens"] == (100, 130, 30)
    assert figures["output_tokens"] == (20, 15, -5)
    assert figures["wall_ms"] == (1500.0, None, None)
    assert figures["tool_calls"] == (1, 2, 1)
    assert figures["model_calls"] == (2, 3, 1)
    assert result.cost.delta == Decimal("0.0008")
    assert not result.cost.complete


def test_costs_in_two_currencies_or_unknown_have_no_difference() -> None:
    script = weather("Oslo", "1", "x")
    euros = record(script, cost=costs.Total(Decimal("1"), "EUR", complete=True))
    dollars = record(script, cost=costs.Total(Decimal("1"), "USD", complete=True))
    unknown = record(script, cost=costs.Total(None, "USD", complete=False))
    assert compare(euros, dollars).cost.delta is None
    assert compare(dollars, unknown).cost.delta is None
    assert compare(dollars, dollars).cost.delta == Decimal(0)
