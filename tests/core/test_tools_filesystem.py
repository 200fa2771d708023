"""Filesystem tools: what they do inside the root, and that nothing gets out of it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agents_core import EventType, LlmAgent, Runner, ScriptedModel
from agents_core.exceptions import ConfigurationError, ToolArgumentsError, ToolExecutionError
from agents_core.sessions import InMemorySessionService
from agents_core.testing import collect, reply, tool_call
from agents_core.tools import _jail, filesystem
from agents_core.tools.base import BaseTool
from agents_core.tools.filesystem import (
    TRUNCATION_MARKER,
    FilesystemSettings,
    PathEscapeError,
    PathListing,
    filesystem_tools,
)
from tests.core.corpora.harness import call, invoke, tool_responses
from tests.core.corpora.traversal import (
    LEAK_MARKERS,
    SECRET,
    Sandbox,
    build_sandbox,
    traversal_cases,
)

Args = Callable[[str], dict[str, Any]]


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    return build_sandbox(tmp_path)


def tools_for(sandbox: Sandbox, **overrides: Any) -> dict[str, BaseTool]:
    settings = FilesystemSettings(root=sandbox.root, **overrides)
    return {tool.name: tool for tool in filesystem_tools(settings)}


async def run(sandbox: Sandbox, name: str, **args: Any) -> Any:
    return await invoke(tools_for(sandbox)[name], **args)


def leaks(raw: str, output: str) -> list[str]:
    """Markers of the outside world that the output shows although the input did not."""
    return [marker for marker in LEAK_MARKERS if marker in output and marker not in raw]


async def escapes(sandbox: Sandbox, tool: BaseTool, args: Args) -> list[tuple[str, str]]:
    """Every traversal case whose call leaked or changed anything outside the root."""
    found = []
    before = sandbox.snapshot()
    for raw in traversal_cases(sandbox):
        output = await call(tool, **args(raw))
        if leaks(raw, output) or sandbox.snapshot() != before:
            found.append((raw, output))
    return found


def test_traversal_corpus_has_at_least_300_distinct_cases(sandbox: Sandbox) -> None:
    cases = traversal_cases(sandbox)
    assert len(cases) == len(set(cases)) >= 300


CORPUS_CALLS: dict[str, tuple[str, Args]] = {
    "read": ("read", lambda p: {"path": p}),
    "write": ("write", lambda p: {"path": p, "content": "PWNED"}),
    "edit": ("edit", lambda p: {"path": p, "old": "CANARY", "new": "PWNED"}),
    "ls": ("ls", lambda p: {"path": p}),
    "mkdir": ("mkdir", lambda p: {"path": p}),
    "glob pattern": ("glob", lambda p: {"pattern": p}),
    "glob pattern below": ("glob", lambda p: {"pattern": f"{p}/*"}),
    "glob base path": ("glob", lambda p: {"pattern": "**", "path": p}),
    "grep path": ("grep", lambda p: {"pattern": "CANARY|hello", "path": p}),
}


@pytest.mark.parametrize("case", CORPUS_CALLS)
async def test_no_traversal_case_reads_or_changes_anything_outside_the_root(
    sandbox: Sandbox, case: str
) -> None:
    name, args = CORPUS_CALLS[case]
    assert await escapes(sandbox, tools_for(sandbox)[name], args) == []


async def test_read_returns_a_file_inside_the_root(sandbox: Sandbox) -> None:
    assert await run(sandbox, "read", path="inside.txt") == "hello from inside\n"
    assert await run(sandbox, "read", path="sub/nested.txt") == "nested hello\n"


async def test_absolute_path_inside_the_root_is_accepted(sandbox: Sandbox) -> None:
    assert await run(sandbox, "read", path=str(sandbox.root / "inside.txt")) == (
        "hello from inside\n"
    )


@pytest.mark.parametrize(
    "path",
    ["../canary.txt", "sub/../../canary.txt", "..", "/etc/passwd", "sub/" + "../" * 5 + "x"],
)
async def test_climbing_above_the_root_is_a_path_escape(sandbox: Sandbox, path: str) -> None:
    with pytest.raises(PathEscapeError, match="outside the filesystem root"):
        await run(sandbox, "read", path=path)


async def test_sibling_directory_sharing_the_root_prefix_is_outside(sandbox: Sandbox) -> None:
    sibling = f"{sandbox.root}-x/canary.txt"
    with pytest.raises(PathEscapeError):
        await run(sandbox, "read", path=sibling)
    with pytest.raises(PathEscapeError):
        await run(sandbox, "read", path=f"../{sandbox.root.name}-x/canary.txt")


@pytest.mark.parametrize(
    "path",
    [
        "l_out_file",
        "l_out_abs",
        "l_out_dir/canary.txt",
        "l_sibling/canary.txt",
        "sub/upup/canary.txt",
        "l_chain/canary.txt",
        "l_in/upup/canary.txt",
        "sub/deeper/l_back/canary.txt",
    ],
)
async def test_symlink_leaving_the_root_in_any_component_is_refused(
    sandbox: Sandbox, path: str
) -> None:
    with pytest.raises(PathEscapeError) as raised:
        await run(sandbox, "read", path=path)
    assert "elsewhere" not in raised.value.message
    assert SECRET not in raised.value.message


async def test_dangling_symlink_pointing_outside_cannot_be_written_through(
    sandbox: Sandbox,
) -> None:
    with pytest.raises(PathEscapeError):
        await run(sandbox, "write", path="l_dangling_out", content="x")
    assert not (sandbox.outside / "elsewhere" / "missing.txt").exists()


async def test_symlinks_that_stay_inside_the_root_are_followed(sandbox: Sandbox) -> None:
    assert await run(sandbox, "read", path="l_file_in") == "hello from inside\n"
    assert await run(sandbox, "read", path="l_in/nested.txt") == "nested hello\n"
    assert await run(sandbox, "read", path="sub/up/inside.txt") == "hello from inside\n"
    assert await run(sandbox, "read", path="l_in_abs/nested.txt") == "nested hello\n"


@pytest.mark.parametrize("path", ["loop_a", "self_loop/x", "loop_b/inside.txt"])
async def test_symlink_loop_is_an_error_not_a_hang(sandbox: Sandbox, path: str) -> None:
    with pytest.raises(ToolExecutionError, match="symlink loop"):
        await run(sandbox, "read", path=path)


async def test_url_encoded_dots_are_literal_names_inside_the_root(sandbox: Sandbox) -> None:
    await run(sandbox, "write", path="%2e%2e/%2e%2e/x.txt", content="literal")
    assert (sandbox.root / "%2e%2e" / "%2e%2e" / "x.txt").read_text() == "literal"
    await run(sandbox, "write", path="~/x.txt", content="tilde")
    assert (sandbox.root / "~" / "x.txt").read_text() == "tilde"


async def test_nul_byte_in_a_path_is_an_argument_error(sandbox: Sandbox) -> None:
    with pytest.raises(ToolArgumentsError, match="NUL"):
        await run(sandbox, "read", path="inside.txt\x00../canary.txt")


async def test_files_are_opened_without_following_a_symlink_swapped_in_after_the_check(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    swapped = sandbox.root / "l_out_file"
    monkeypatch.setattr(_jail.Jail, "resolve", lambda self, raw: swapped)
    with pytest.raises(ToolExecutionError):
        await run(sandbox, "write", path="anything", content="PWNED")
    with pytest.raises(ToolExecutionError):
        await run(sandbox, "read", path="anything")
    assert (sandbox.outside / "canary.txt").read_text() == f"{SECRET}\n"


async def test_read_of_a_fifo_fails_instead_of_blocking(sandbox: Sandbox) -> None:
    os.mkfifo(sandbox.root / "pipe")
    with pytest.raises(ToolExecutionError, match="not a regular file"):
        await run(sandbox, "read", path="pipe")


async def test_read_truncates_a_large_file_and_offset_reads_on(sandbox: Sandbox) -> None:
    (sandbox.root / "big.txt").write_text("a" * 10 + "b" * 10)
    tool = tools_for(sandbox, max_read_bytes=10)["read"]
    first = await invoke(tool, path="big.txt")
    assert first.startswith("a" * 10 + "\n" + TRUNCATION_MARKER)
    assert "offset=10" in first
    assert await invoke(tool, path="big.txt", offset=10) == "b" * 10


async def test_write_refuses_content_over_the_size_cap(sandbox: Sandbox) -> None:
    tool = tools_for(sandbox, max_write_bytes=4)["write"]
    with pytest.raises(ToolArgumentsError, match="limit is 4"):
        await invoke(tool, path="x.txt", content="12345")
    assert not (sandbox.root / "x.txt").exists()


async def test_write_creates_missing_parents_and_overwrites(sandbox: Sandbox) -> None:
    await run(sandbox, "write", path="new/dir/file.txt", content="first version")
    await run(sandbox, "write", path="new/dir/file.txt", content="second")
    assert (sandbox.root / "new" / "dir" / "file.txt").read_text() == "second"


async def test_edit_replaces_a_unique_occurrence(sandbox: Sandbox) -> None:
    result = await run(sandbox, "edit", path="inside.txt", old="inside", new="within")
    assert result == "replaced 1 occurrence(s) in inside.txt"
    assert (sandbox.root / "inside.txt").read_text() == "hello from within\n"


async def test_edit_refuses_ambiguous_or_missing_text_unless_replace_all(
    sandbox: Sandbox,
) -> None:
    (sandbox.root / "twice.txt").write_text("x x")
    with pytest.raises(ToolExecutionError, match="found 2 times"):
        await run(sandbox, "edit", path="twice.txt", old="x", new="y")
    with pytest.raises(ToolExecutionError, match="not found"):
        await run(sandbox, "edit", path="twice.txt", old="z", new="y")
    await run(sandbox, "edit", path="twice.txt", old="x", new="y", replace_all=True)
    assert (sandbox.root / "twice.txt").read_text() == "y y"


async def test_edit_refuses_a_file_over_the_size_cap(sandbox: Sandbox) -> None:
    tool = tools_for(sandbox, max_write_bytes=5)["edit"]
    with pytest.raises(ToolExecutionError, match="the limit is 5"):
        await invoke(tool, path="inside.txt", old="h", new="j")


async def test_ls_lists_entries_and_skips_symlinks_that_leave_the_root(
    sandbox: Sandbox,
) -> None:
    listing: PathListing = await run(sandbox, "ls", path=".")
    assert {"inside.txt", "sub/", "l_in/", "l_file_in"} <= set(listing.paths)
    assert not {"l_out_dir/", "l_out_file", "l_sibling/", "loop_a"} & set(listing.paths)
    skipped = " ".join(listing.skipped)
    for link in ("l_out_dir", "l_out_file", "l_sibling", "l_chain", "l_dangling_out"):
        assert f"{link}: symlink leaves the root" in skipped
    assert "loop_a: symlink loop" in skipped
    assert "elsewhere" not in listing.model_dump_json()


async def test_ls_of_a_subdirectory_answers_root_relative_paths(sandbox: Sandbox) -> None:
    listing: PathListing = await run(sandbox, "ls", path="sub")
    assert listing.paths == ["sub/deeper/", "sub/nested.txt", "sub/up/"]
    assert [s.split(":")[0] for s in listing.skipped] == ["sub/upup"]


async def test_glob_matches_across_directories_without_following_links(
    sandbox: Sandbox,
) -> None:
    listing: PathListing = await run(sandbox, "glob", pattern="**/*.txt")
    assert listing.paths == ["inside.txt", "sub/nested.txt"]
    assert any(s.startswith("l_out_dir:") for s in listing.skipped)
    assert SECRET not in listing.model_dump_json()


async def test_glob_terminates_on_symlink_loops_and_lists_each_file_once(
    sandbox: Sandbox,
) -> None:
    listing: PathListing = await run(sandbox, "glob", pattern="**")
    assert len(listing.paths) == len(set(listing.paths))
    assert "sub/nested.txt" in listing.paths
    assert "dir_loop/" in listing.paths
    assert not any(p.startswith("dir_loop/") and p != "dir_loop/" for p in listing.paths)


async def test_glob_through_a_literal_symlink_prefix_inside_the_root(sandbox: Sandbox) -> None:
    listing: PathListing = await run(sandbox, "glob", pattern="l_in/*.txt")
    assert listing.paths == ["sub/nested.txt"]


async def test_glob_caps_results_and_says_so(sandbox: Sandbox) -> None:
    for index in range(5):
        (sandbox.root / f"f{index}.log").write_text("")
    tool = tools_for(sandbox, max_results=3)["glob"]
    listing = await invoke(tool, pattern="*.log")
    assert len(listing.paths) == 3
    assert listing.truncated


async def test_grep_finds_lines_inside_and_never_reads_through_escaping_links(
    sandbox: Sandbox,
) -> None:
    found = await run(sandbox, "grep", pattern="hello|CANARY")
    assert found.matches == [
        "inside.txt:1: hello from inside",
        "l_file_in:1: hello from inside",
        "sub/nested.txt:1: nested hello",
    ]
    assert SECRET not in found.model_dump_json()
    assert any(s.startswith("l_out_file:") for s in found.skipped)


async def test_grep_filters_by_file_name_and_searches_a_single_file(sandbox: Sandbox) -> None:
    (sandbox.root / "notes.md").write_text("hello markdown\n")
    by_name = await run(sandbox, "grep", pattern="hello", include="*.md")
    assert by_name.matches == ["notes.md:1: hello markdown"]
    single = await run(sandbox, "grep", pattern="HELLO", path="sub/nested.txt", ignore_case=True)
    assert single.matches == ["sub/nested.txt:1: nested hello"]


async def test_grep_caps_matches_and_reports_partially_searched_files(
    sandbox: Sandbox,
) -> None:
    (sandbox.root / "many.txt").write_text("hit\n" * 50)
    tools = tools_for(sandbox, max_results=5, max_read_bytes=40)
    found = await invoke(tools["grep"], pattern="hit", path="many.txt")
    assert len(found.matches) == 5
    assert found.truncated
    assert found.skipped == ["many.txt: only the first 40 bytes searched"]


async def test_grep_rejects_an_invalid_regular_expression(sandbox: Sandbox) -> None:
    with pytest.raises(ToolArgumentsError, match="invalid regular expression"):
        await run(sandbox, "grep", pattern="(")


async def test_mkdir_creates_nested_directories(sandbox: Sandbox) -> None:
    await run(sandbox, "mkdir", path="a/b/c")
    await run(sandbox, "mkdir", path="a/b/c")
    assert (sandbox.root / "a" / "b" / "c").is_dir()


async def test_read_only_settings_leave_out_the_writers(sandbox: Sandbox) -> None:
    assert set(tools_for(sandbox, read_only=True)) == {"ls", "read", "glob", "grep"}
    assert set(tools_for(sandbox)) == {"ls", "read", "glob", "grep", "write", "edit", "mkdir"}
    writer = filesystem.WriteTool(FilesystemSettings(root=sandbox.root, read_only=True))
    with pytest.raises(ToolExecutionError, match="read-only"):
        await invoke(writer, path="x", content="x")


async def test_unknown_or_missing_arguments_are_argument_errors(sandbox: Sandbox) -> None:
    with pytest.raises(ToolArgumentsError, match="not permitted"):
        await run(sandbox, "read", path="inside.txt", follow_symlinks=True)
    with pytest.raises(ToolArgumentsError, match="path"):
        await run(sandbox, "read")


def test_settings_need_an_existing_absolute_root(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="absolute"):
        FilesystemSettings(root=Path("relative"))
    with pytest.raises(ConfigurationError, match="not a directory"):
        filesystem_tools(FilesystemSettings(root=tmp_path / "missing"))


def test_settings_round_trip_through_json(tmp_path: Path) -> None:
    settings = FilesystemSettings(root=tmp_path, max_results=7, read_only=True)
    assert FilesystemSettings.model_validate(json.loads(settings.model_dump_json())) == settings


def test_every_tool_describes_its_arguments_as_a_closed_json_schema(tmp_path: Path) -> None:
    for tool in filesystem_tools(FilesystemSettings(root=tmp_path)):
        schema = tool.schema().parameters
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False
        assert tool.description


async def test_agent_sees_escapes_as_error_results_and_the_run_goes_on(
    sandbox: Sandbox,
) -> None:
    model = ScriptedModel(
        [
            tool_call("read", path="../canary.txt"),
            tool_call("grep", pattern="CANARY", path="l_out_dir"),
            tool_call("write", path="notes/todo.txt", content="ship it"),
            tool_call("read", path="notes/todo.txt"),
            reply("done"),
        ]
    )
    agent = LlmAgent(
        "files", model=model, tools=filesystem_tools(FilesystemSettings(root=sandbox.root))
    )
    runner = Runner(agent, session_service=InMemorySessionService())
    events = await collect(runner.astream(user_id="u", session_id="s", message="go"))
    responses = tool_responses(events)
    assert [(r.is_error, r.result.split(":")[0]) for r in responses[:2]] == [
        (True, "path_escape"),
        (True, "path_escape"),
    ]
    assert responses[3].result == "ship it"
    assert EventType.ERROR not in {e.type for e in events}
    assert events[-1].type == EventType.AGENT_END
    assert SECRET not in "".join(e.model_dump_json() for e in events)
