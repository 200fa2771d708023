"""Google ADK eval sets (``*.evalset.json``) read as cases, as ADK writes them.

An ``EvalSet`` (``eval_set_id``, ``name``, ``description``, ``eval_cases``) holds
``EvalCase``\\ s (``eval_id``, ``conversation``, ``session_input``); a conversation is a
list of ``Invocation``\\ s, each a ``user_content``, the expected ``final_response`` and
``intermediate_data`` with the expected ``tool_uses`` (``{name, args}``), or, in newer
files, ``invocation_events`` whose parts carry ``function_call``\\ s. Keys are read in
ADK's snake_case or its camelCase aliases.

Each eval case becomes one ``Case``: its turns are the invocations' user texts, its
expected final output the last invocation's final response, its expected tool calls
those of every invocation in order, its starting state ``session_input.state``.

The older formats read too: a list of turns (``query``, ``expected_tool_use`` of
``{tool_name, tool_input}``, ``reference``), which is one case, and a list of
``{name, data: [turns], initial_session: {state}}``, a case each.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from agents_core.evals._files import DatasetFormatError, ParsedFile, case_from
from agents_core.evals.contracts import Case


def parse_adk(text: str, *, filename: str = "") -> ParsedFile:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise DatasetFormatError(f"not JSON: {exc}") from None
    if isinstance(document, dict):
        return _eval_set(document)
    if isinstance(document, list) and all(isinstance(item, dict) for item in document):
        return _old_format(document, filename)
    raise DatasetFormatError(
        "an ADK eval set is a JSON object with eval_cases (or a list of turns)"
    )


def _get(value: Any, snake: str) -> Any:
    """``value[snake]``, or its camelCase alias, or ``None``."""
    if not isinstance(value, dict):
        return None
    if snake in value:
        return value[snake]
    head, *rest = snake.split("_")
    return value.get(head + "".join(word.title() for word in rest))


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise DatasetFormatError(f"{where}: a list was expected")
    return value


def _eval_set(document: dict[str, Any]) -> ParsedFile:
    if _get(document, "eval_cases") is None:
        raise DatasetFormatError("eval_cases: missing; an ADK eval set lists its eval_cases")
    raw_cases = _list(_get(document, "eval_cases"), "eval_cases")
    cases = [_eval_case(raw, f"eval_cases[{index}]") for index, raw in enumerate(raw_cases)]
    name = _get(document, "eval_set_id") or _get(document, "name")
    return ParsedFile(
        cases,
        "adk",
        name=str(name) if name else None,
        description=str(_get(document, "description") or ""),
    )


def _eval_case(raw: Any, where: str) -> Case:
    if not isinstance(raw, dict):
        raise DatasetFormatError(f"{where}: an eval case is a JSON object")
    conversation = _list(_get(raw, "conversation"), f"{where}.conversation")
    if not conversation:
        raise DatasetFormatError(f"{where}.conversation: no invocations")
    turns: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    seen_tools = False
    for index, invocation in enumerate(conversation):
        at = f"{where}.conversation[{index}]"
        text = _text(_get(invocation, "user_content"))
        if not text:
            raise DatasetFormatError(f"{at}.user_content: no text part")
        turns.append(text)
        intermediate = _get(invocation, "intermediate_data")
        seen_tools = seen_tools or intermediate is not None
        tool_calls.extend(_tool_uses(intermediate, f"{at}.intermediate_data"))
    expect: dict[str, Any] = {}
    if final := _text(_get(conversation[-1], "final_response")):
        expect["final_output"] = final
    if seen_tools:
        expect["tool_calls"] = tool_calls
    value = {
        "name": str(_get(raw, "eval_id") or where),
        "input": {"turns": turns, "state": _get(_get(raw, "session_input"), "state") or {}},
        "expect": expect,
    }
    return case_from(value, where)


def _text(content: Any) -> str:
    """The text parts of an ADK ``Content``, joined by new lines."""
    parts = _get(content, "parts")
    if not isinstance(parts, list):
        return ""
    texts = [_get(part, "text") for part in parts]
    return "\n".join(text for text in texts if isinstance(text, str) and text)


def _tool_uses(intermediate: Any, where: str) -> list[dict[str, Any]]:
    if intermediate is None:
        return []
    uses = _list(_get(intermediate, "tool_uses"), f"{where}.tool_uses")
    for event in _list(_get(intermediate, "invocation_events"), f"{where}.invocation_events"):
        for part in _get(_get(event, "content"), "parts") or []:
            if (call := _get(part, "function_call")) is not None:
                uses.append(call)
    return [_call(use, f"{where}.tool_uses[{index}]") for index, use in enumerate(uses)]


def _call(use: Any, where: str) -> dict[str, Any]:
    name = _get(use, "name")
    if not isinstance(name, str) or not name:
        raise DatasetFormatError(f"{where}.name: a tool use names its tool")
    args = _get(use, "args") or {}
    if not isinstance(args, dict):
        raise DatasetFormatError(f"{where}.args: a JSON object was expected")
    return {"name": name, "args": args}


# -- the older formats -----------------------------------------------------------------


def _old_format(items: list[dict[str, Any]], filename: str) -> ParsedFile:
    stem = PurePosixPath(filename.replace("\\", "/")).name.split(".")[0] or None
    if items and all("data" in item for item in items):
        cases = [
            _old_case(
                _list(item["data"], f"[{index}].data"),
                str(item.get("name") or f"case-{index + 1}"),
                _get(item.get("initial_session"), "state") or {},
                f"[{index}]",
            )
            for index, item in enumerate(items)
        ]
        return ParsedFile(cases, "adk", name=stem)
    return ParsedFile([_old_case(items, stem or "case-1", {}, "")], "adk", name=stem)


def _old_case(turns: list[Any], name: str, state: Any, where: str) -> Case:
    if not turns:
        raise DatasetFormatError(f"{where or 'the file'}: no turns")
    queries: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, turn in enumerate(turns):
        at = f"{where}[{index}]" if where else f"turn {index + 1}"
        query = _get(turn, "query")
        if not isinstance(query, str) or not query:
            raise DatasetFormatError(f"{at}.query: each turn has a query text")
        queries.append(query)
        for use in _list(_get(turn, "expected_tool_use"), f"{at}.expected_tool_use"):
            calls.append(
                _call({"name": _get(use, "tool_name"), "args": _get(use, "tool_input")}, at)
            )
    expect: dict[str, Any] = {"tool_calls": calls}
    if reference := _get(turns[-1], "reference"):
        expect["final_output"] = reference
    value = {"name": name, "input": {"turns": queries, "state": state}, "expect": expect}
    return case_from(value, where or "the file")
