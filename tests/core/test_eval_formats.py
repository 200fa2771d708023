"""Dataset files (``agents_core.evals.formats`` and ``.adk``): JSONL, CSV and Google ADK
eval sets read as cases, with errors that say where; JSONL written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents_core.evals import formats
from agents_core.evals.contracts import Case, CaseInput, Expectation, ExpectedToolCall
from agents_core.evals.formats import DatasetFormatError, detect_format, parse_file, to_jsonl

EVALSET = Path(__file__).parents[1] / "support" / "evals" / "home_automation.evalset.json"


def _parse(text: str, fmt: formats.Format, filename: str = "") -> list[Case]:
    return parse_file(text.encode(), fmt, filename=filename).cases


# -- JSONL -----------------------------------------------------------------------------


def test_jsonl_reads_a_case_a_line_and_skips_blank_lines() -> None:
    text = (
        '{"name": "sum", "input": {"turns": ["what is 2 + 2?"]},'
        ' "expect": {"final_output": "4", "tool_calls": [{"name": "calculator"}]}}\n'
        "\n"
        '{"name": "hi", "input": {"turns": ["hello", "again"], "state": {"lang": "en"}},'
        ' "tags": ["smoke"]}\n'
    )
    first, second = _parse(text, "jsonl")

    assert first.expect.final_output == "4"
    assert first.expect.tool_calls == [ExpectedToolCall(name="calculator")]
    assert second.input == CaseInput(turns=["hello", "again"], state={"lang": "en"})
    assert second.tags == ["smoke"]
    assert second.expect == Expectation()


def test_a_bad_jsonl_line_is_named_with_the_field_that_is_wrong() -> None:
    text = (
        '{"name": "ok", "input": {"turns": ["hi"]}}\n'
        '{"name": "ok2", "input": {"turns": ["hi"]}}\n'
        '{"name": "empty", "input": {"turns": []}}\n'
    )
    with pytest.raises(DatasetFormatError, match=r"^line 3: input\.turns: List should have"):
        _parse(text, "jsonl")


def test_a_jsonl_cases_input_may_be_its_one_message_as_in_csv() -> None:
    (case,) = _parse('{"name": "sum", "input": "what is 2 + 2?"}\n', "jsonl")

    assert case.input == CaseInput(turns=["what is 2 + 2?"])


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", r"^line 1: not JSON"),
        ('["a list"]', r"^line 1: a case is a JSON object"),
        ('{"name": "x", "input": {"turns": ["hi"]}, "colour": 1}', r"^line 1: colour: Extra"),
        # Never pydantic's "or instance of CaseInput": a class name means nothing here.
        ('{"name": "x", "input": 3}', r"^line 1: input: Input should be a JSON object$"),
        (
            '{"name": "x", "input": "hi", "expect": "4"}',
            r"^line 1: expect: Input should be a JSON object$",
        ),
    ],
)
def test_jsonl_refuses_what_is_not_a_case(line: str, message: str) -> None:
    with pytest.raises(DatasetFormatError, match=message):
        _parse(line, "jsonl")


def test_case_names_are_unique_within_a_file() -> None:
    line = '{"name": "same", "input": {"turns": ["hi"]}}\n'
    with pytest.raises(DatasetFormatError, match="case 2: the name 'same' is taken by case 1"):
        _parse(line * 2, "jsonl")


def test_export_then_import_gives_the_same_cases() -> None:
    cases = [
        Case(
            name="with everything",
            input=CaseInput(turns=["one", "two"], state={"n": 1}),
            expect=Expectation.model_validate(
                {
                    "final_output": "done",
                    "tool_calls": [{"name": "calc", "args": {"x": None, "deep": {"a": [1]}}}],
                    "state": {"n": 2},
                    "limits": {"max_cost": "0.25", "max_steps": 3},
                }
            ),
            tags=["a", "b"],
        ),
        Case(name="bare", input=CaseInput(turns=["hi"])),
        Case(name="no tools expected", input=CaseInput(turns=["hi"]), expect={"tool_calls": []}),
    ]
    text = to_jsonl(cases)

    assert text.count("\n") == 3
    assert _parse(text, "jsonl") == cases


# -- CSV -------------------------------------------------------------------------------


def test_csv_reads_one_turn_or_a_json_list_of_turns() -> None:
    text = (
        "name,input,expected_output,expected_tool_calls,tags\n"
        'sum,"what is 2 + 2?",4,"[{""name"": ""calculator"", ""args"": {""expression"": '
        '""2 + 2""}}]","math, smoke"\n'
        ',"a question,\nover two lines",,,\n'
    )
    first, second = _parse(text, "csv")

    assert first.input.turns == ["what is 2 + 2?"]
    assert first.expect.final_output == "4"
    assert first.expect.tool_calls == [
        ExpectedToolCall(name="calculator", args={"expression": "2 + 2"})
    ]
    assert first.tags == ["math", "smoke"]
    assert second.name == "case-2"
    assert second.input.turns == ["a question,\nover two lines"]
    assert second.expect == Expectation()

    turns = _parse('name,turns,state\nchat,"[""hi"", ""bye""]","{""a"": 1}"\n', "csv")
    assert turns[0].input == CaseInput(turns=["hi", "bye"], state={"a": 1})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,prompt\nx,hi\n", r"^line 1: unknown column 'prompt'"),
        ("name,expected_output\nx,hi\n", r"^line 1: give an 'input' column or a 'turns'"),
        ("", r"^line 1: the CSV has no header row"),
        ("name,input\nok,hi\nbad,\n", r"^line 3: input\.turns\.0: String should have"),
        ('name,turns\nx,"[1"\n', r"^line 2: turns: not JSON"),
        ("name,input\nx,hi,extra\n", r"^line 2: more cells than columns"),
        ("name,input\n", r"^the file has no cases"),
    ],
)
def test_csv_errors_say_which_line(text: str, message: str) -> None:
    with pytest.raises(DatasetFormatError, match=message):
        _parse(text, "csv")


# -- ADK -------------------------------------------------------------------------------


def test_an_adk_evalset_imports_as_it_is() -> None:
    parsed = parse_file(EVALSET.read_bytes(), "adk", filename=EVALSET.name)
    off, switch, talk = parsed.cases

    assert parsed.name == "home_automation_agent_light_on_off_set"
    assert parsed.description.startswith("Turning devices on and off")
    assert off.name == "turn_off_bedroom_device"
    assert off.input == CaseInput(turns=["Turn off device_2 in the Bedroom."])
    assert off.expect.final_output == "I have set the device_2 status to off."
    assert off.expect.tool_calls == [
        ExpectedToolCall(
            name="set_device_info",
            args={"location": "Bedroom", "device_id": "device_2", "status": "OFF"},
        )
    ]
    # Two invocations: two turns, the last one's answer, every invocation's tool uses.
    assert switch.input.turns == ["Is the kitchen light on?", "Switch it on, please."]
    assert switch.input.state == {"home": "flat-3", "units": "metric"}
    assert switch.expect.final_output == "Done: the kitchen light is on."
    assert [call.name for call in switch.expect.tool_calls or []] == [
        "get_device_info",
        "set_device_info",
    ]
    # Text parts are joined; an empty list of tool uses expects no tool call at all.
    assert talk.expect.final_output == (
        "I can switch your devices on and off\nand tell you how they are set."
    )
    assert talk.expect.tool_calls == []


def test_adk_camel_case_keys_and_invocation_events_read_too() -> None:
    document = {
        "evalSetId": "camel",
        "evalCases": [
            {
                "evalId": "c1",
                "conversation": [
                    {
                        "userContent": {"parts": [{"text": "weather in Paris?"}]},
                        "finalResponse": {"parts": [{"text": "Sunny."}]},
                        "intermediateData": {
                            "invocationEvents": [
                                {
                                    "author": "agent",
                                    "content": {
                                        "parts": [
                                            {
                                                "functionCall": {
                                                    "name": "weather",
                                                    "args": {"city": "Paris"},
                                                }
                                            }
                                        ]
                                    },
                                }
                            ]
                        },
                    }
                ],
                "sessionInput": {"state": {"unit": "C"}},
            }
        ],
    }
    (case,) = _parse(json.dumps(document), "adk")

    assert case.input == CaseInput(turns=["weather in Paris?"], state={"unit": "C"})
    assert case.expect.tool_calls == [ExpectedToolCall(name="weather", args={"city": "Paris"})]
    assert case.expect.final_output == "Sunny."


def test_adk_older_list_of_turns_is_one_case() -> None:
    turns = [
        {
            "query": "hi",
            "expected_tool_use": [],
            "reference": "Hello!",
        },
        {
            "query": "roll a die",
            "expected_tool_use": [{"tool_name": "roll_die", "tool_input": {"sides": 6}}],
            "expected_intermediate_agent_responses": [],
            "reference": "I rolled a 4.",
        },
    ]
    parsed = parse_file(json.dumps(turns).encode(), "adk", filename="dice.test.json")

    (case,) = parsed.cases
    assert parsed.name == "dice"
    assert case.input.turns == ["hi", "roll a die"]
    assert case.expect.final_output == "I rolled a 4."
    assert case.expect.tool_calls == [ExpectedToolCall(name="roll_die", args={"sides": 6})]


def test_adk_older_named_cases_with_initial_sessions() -> None:
    items = [
        {"name": "a", "data": [{"query": "x", "reference": "y"}], "initial_session": {}},
        {
            "name": "b",
            "data": [{"query": "z", "expected_tool_use": []}],
            "initial_session": {"state": {"k": 1}, "app_name": "app", "user_id": "u"},
        },
    ]
    a, b = _parse(json.dumps(items), "adk")

    assert (a.name, a.expect.final_output) == ("a", "y")
    assert b.input.state == {"k": 1}
    assert b.expect.final_output is None


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{", r"^not JSON"),
        ('"text"', r"^an ADK eval set is a JSON object"),
        ("{}", r"^eval_cases: missing"),
        ('{"eval_cases": {}}', r"^eval_cases: a list was expected"),
        ('{"eval_cases": [{"eval_id": "x", "conversation": []}]}', r"conversation: no invoc"),
        (
            '{"eval_cases": [{"eval_id": "x", "conversation": [{"user_content": {"parts": []}}]}]}',
            r"^eval_cases\[0\]\.conversation\[0\]\.user_content: no text part",
        ),
        (
            '{"eval_cases": [{"eval_id": "x", "conversation": [{"user_content": {"parts": '
            '[{"text": "hi"}]}, "intermediate_data": {"tool_uses": [{"args": {}}]}}]}]}',
            r"intermediate_data\.tool_uses\[0\]\.name: a tool use names its tool",
        ),
        ('[{"reference": "no query"}]', r"^turn 1\.query: each turn has a query text"),
    ],
)
def test_adk_errors_say_where(document: str, message: str) -> None:
    with pytest.raises(DatasetFormatError, match=message):
        _parse(document, "adk")


# -- detection and limits --------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "content", "expected"),
    [
        ("x.evalset.json", b"{}", "adk"),
        ("x.test.json", b"[]", "adk"),
        ("cases.jsonl", b"{}", "jsonl"),
        ("cases.CSV", b"name,input", "csv"),
        ("upload", b'\n{"name": "a", "input": {"turns": ["x"]}}\n', "jsonl"),
        ("upload", b'{\n  "eval_set_id": "s",\n  "eval_cases": []\n}', "adk"),
        ("upload", b"[{}]", "adk"),
        ("upload", b"name,input\n", "csv"),
    ],
)
def test_the_format_comes_from_the_name_else_the_content(
    filename: str, content: bytes, expected: str
) -> None:
    assert detect_format(filename, content) == expected


def test_files_over_the_size_limits_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DatasetFormatError, match="at most 5,242,880 can be imported"):
        parse_file(b" " * (formats.MAX_FILE_BYTES + 1), "jsonl")
    monkeypatch.setattr(formats, "MAX_CASES", 2)
    line = '{"name": "c%d", "input": {"turns": ["hi"]}}\n'
    with pytest.raises(DatasetFormatError, match="line 3: more than 2 cases"):
        _parse("".join(line % n for n in range(3)), "jsonl")
    with pytest.raises(DatasetFormatError, match="the file has 3 cases; at most 2"):
        _parse(
            json.dumps(
                [
                    {"name": f"c{n}", "data": [{"query": "q", "expected_tool_use": []}]}
                    for n in range(3)
                ]
            ),
            "adk",
        )


def test_a_file_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(DatasetFormatError, match=r"not UTF-8 text \(byte 0\)"):
        parse_file(b"\xff\xfe", "csv")
