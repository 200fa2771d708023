"""Dataset files: cases read from JSONL, CSV or Google ADK eval sets, and written as JSONL.

Pure functions over bytes and text; nothing here stores anything. Every refusal is a
``DatasetFormatError`` whose message says where (``line 3: input.turns: ...``), so a
host can show it as it is.

**JSONL**: one ``Case`` a line, as the contract's JSON (blank lines are skipped)::

    {"name": "sum", "input": {"turns": ["what is 2 + 2?"]},
     "expect": {"final_output": "4", "tool_calls": [{"name": "calculator"}]}}

A case of one user turn may give it as its ``input``, as CSV's column does:
``{"name": "sum", "input": "what is 2 + 2?"}``.

**CSV**: a header row, then one case a row. Columns (only ``input`` or ``turns`` is
required; unknown columns are an error):

- ``name``: the case's name (``case-<row>`` when empty);
- ``input``: the one user turn, or ``turns``: a JSON list of turns;
- ``state``: a JSON object, the session state the case starts from;
- ``expected_output``: the expected final answer (empty: not checked);
- ``expected_tool_calls``: a JSON list of ``{"name", "args"}`` (empty: not checked);
- ``tags``: comma-separated, or a JSON list.

**ADK**: ``.evalset.json`` files of Google's Agent Development Kit, read by
``agents_core.evals.adk``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from typing import Any

from agents_core.evals import adk
from agents_core.evals._files import (
    DatasetFormatError,
    Format,
    ParsedFile,
    case_from,
    plain_message,
    validation_message,
)
from agents_core.evals.contracts import Case

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_CASES = 5_000
FORMATS: tuple[Format, ...] = ("jsonl", "csv", "adk")

CSV_COLUMNS = (
    "name",
    "input",
    "turns",
    "state",
    "expected_output",
    "expected_tool_calls",
    "tags",
)

__all__ = [
    "CSV_COLUMNS",
    "FORMATS",
    "MAX_CASES",
    "MAX_FILE_BYTES",
    "DatasetFormatError",
    "Format",
    "ParsedFile",
    "detect_format",
    "parse_file",
    "plain_message",
    "to_jsonl",
    "validation_message",
]


def detect_format(filename: str, data: bytes) -> Format:
    """The format of a file from its name, else from how its content starts."""
    lowered = filename.lower()
    if lowered.endswith((".evalset.json", ".test.json")):
        return "adk"
    if lowered.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if lowered.endswith(".csv"):
        return "csv"
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        return "adk"
    if head.startswith(b"{"):
        # One whole JSON document is an eval set; a line per object is JSONL.
        return "adk" if b'"eval_cases"' in head or b'"evalCases"' in head else "jsonl"
    return "csv"


def parse_file(data: bytes, fmt: Format, *, filename: str = "") -> ParsedFile:
    """The cases of a file of ``fmt``, checked against the size limits."""
    text = decode(data)
    if fmt == "jsonl":
        return ParsedFile(checked(parse_jsonl(text)), "jsonl")
    if fmt == "csv":
        return ParsedFile(checked(parse_csv(text)), "csv")
    parsed = adk.parse_adk(text, filename=filename)
    checked(parsed.cases)
    return parsed


def decode(data: bytes) -> str:
    if len(data) > MAX_FILE_BYTES:
        raise DatasetFormatError(
            f"the file is {len(data):,} bytes; at most {MAX_FILE_BYTES:,} can be imported"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(f"the file is not UTF-8 text (byte {exc.start})") from None


def checked(cases: list[Case]) -> list[Case]:
    """``cases`` if there are some, not too many, and their names are unique."""
    if not cases:
        raise DatasetFormatError("the file has no cases")
    if len(cases) > MAX_CASES:
        raise DatasetFormatError(f"the file has {len(cases):,} cases; at most {MAX_CASES:,}")
    check_unique_names(cases)
    return cases


def check_unique_names(cases: Sequence[Case]) -> None:
    seen: dict[str, int] = {}
    for index, case in enumerate(cases, start=1):
        if case.name in seen:
            raise DatasetFormatError(
                f"case {index}: the name {case.name!r} is taken by case {seen[case.name]}; "
                "case names are unique within a dataset"
            )
        seen[case.name] = index


# -- JSONL -----------------------------------------------------------------------------


def parse_jsonl(text: str) -> list[Case]:
    cases: list[Case] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(cases) >= MAX_CASES:
            raise DatasetFormatError(f"line {number}: more than {MAX_CASES:,} cases")
        try:
            value = json.loads(line)
        except ValueError as exc:
            raise DatasetFormatError(f"line {number}: not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise DatasetFormatError(f"line {number}: a case is a JSON object")
        if isinstance(value.get("input"), str):  # its one user turn, as CSV's input column
            value["input"] = {"turns": [value["input"]]}
        cases.append(case_from(value, f"line {number}"))
    return cases


def to_jsonl(cases: Iterable[Case]) -> str:
    """The cases as JSONL, one line each; ``parse_jsonl`` reads them back equal."""
    return "".join(case.model_dump_json(exclude_defaults=True) + "\n" for case in cases)


# -- CSV -------------------------------------------------------------------------------


def parse_csv(text: str) -> list[Case]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = [name.strip() for name in reader.fieldnames or []]
    _check_columns(columns)
    reader.fieldnames = columns
    cases: list[Case] = []
    for row in reader:
        where = f"line {reader.line_num}"
        if None in row:
            raise DatasetFormatError(f"{where}: more cells than columns")
        if not any((cell or "").strip() for cell in row.values()):
            continue
        if len(cases) >= MAX_CASES:
            raise DatasetFormatError(f"{where}: more than {MAX_CASES:,} cases")
        cases.append(case_from(_csv_case(row, where, len(cases) + 1), where))
    return cases


def _check_columns(columns: list[str]) -> None:
    if not columns:
        raise DatasetFormatError("line 1: the CSV has no header row")
    unknown = [name for name in columns if name not in CSV_COLUMNS]
    if unknown:
        raise DatasetFormatError(
            f"line 1: unknown column {unknown[0]!r}; the columns are {', '.join(CSV_COLUMNS)}"
        )
    if ("input" in columns) == ("turns" in columns):
        raise DatasetFormatError("line 1: give an 'input' column or a 'turns' column (one)")


def _csv_case(row: dict[str, str | None], where: str, index: int) -> dict[str, Any]:
    cell = {key: (value or "").strip() for key, value in row.items()}
    turns = _json_cell(cell, "turns", where) if "turns" in cell else [row.get("input") or ""]
    expect: dict[str, Any] = {}
    if cell.get("expected_output"):
        expect["final_output"] = row["expected_output"]
    if cell.get("expected_tool_calls"):
        expect["tool_calls"] = _json_cell(cell, "expected_tool_calls", where)
    value: dict[str, Any] = {
        "name": cell.get("name") or f"case-{index}",
        "input": {"turns": turns},
        "expect": expect,
        "tags": _tags(cell.get("tags", ""), where),
    }
    if cell.get("state"):
        value["input"]["state"] = _json_cell(cell, "state", where)
    return value


def _json_cell(cell: dict[str, str], column: str, where: str) -> Any:
    try:
        return json.loads(cell[column])
    except ValueError as exc:
        raise DatasetFormatError(f"{where}: {column}: not JSON: {exc}") from None


def _tags(text: str, where: str) -> list[str]:
    if text.startswith("["):
        return list(_json_cell({"tags": text}, "tags", where))
    return [tag.strip() for tag in text.split(",") if tag.strip()]
