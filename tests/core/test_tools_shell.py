"""The shell tool: only allowlisted programs run, with a clean environment, and no
process outlives its call."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agents_core import EventType, LlmAgent, Runner, ScriptedModel
from agents_core.exceptions import ConfigurationError, ToolExecutionError, ToolTimeoutError
from agents_core.sessions import InMemorySessionService
from agents_core.testing import collect, reply, tool_call
from agents_core.tools.base import BaseTool
from agents_core.tools.shell import (
    OUTPUT_TRUNCATED,
    CommandNotAllowedError,
    ShellResult,
    ShellSettings,
    shell_tool,
)
from tests.core.corpora.harness import call, invoke, tool_responses
from tests.core.corpora.shell_bypass import BYPASS_TEMPLATES, bypass_commands

SPAWNER = """#!/bin/sh
sleep "$2" &
echo "$$ $!" > "$1"
{then}
"""
"""Starts ``sleep $2`` in the background and writes its own pid and the child's to $1."""


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    """Test programs: ``hang`` waits on its background child, ``detach`` leaves it."""
    directory = tmp_path / "bin"
    directory.mkdir()
    for name, then in (("hang", "wait"), ("detach", "echo started")):
        script = directory / name
        script.write_text(SPAWNER.format(then=then))
        script.chmod(0o755)
    broken = directory / "broken"
    broken.write_text("#!/nonexistent/interpreter\n")
    broken.chmod(0o755)
    return directory


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """Where a spawner records its pids; whatever they are, they are killed after the test."""
    path = tmp_path / "pids"
    yield path
    for pid in _pids(path):
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def token() -> Iterator[str]:
    """A ``sleep`` duration no other process uses, to find the spawner's children by."""
    value = f"300.{uuid.uuid4().int % 10**12:012d}"
    yield value
    for pid in _running_with(value):
        os.kill(pid, signal.SIGKILL)


def settings(**overrides: Any) -> ShellSettings:
    return ShellSettings(**{"enabled": True, "allowlist": ("echo", "ls", "true"), **overrides})


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for a reaper."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _running_with(argument: str) -> list[int]:
    """Live processes with ``argument`` in their command line."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            words = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or gone meanwhile
            continue
        if argument.encode() in words and _alive(int(proc.name)):
            found.append(int(proc.name))
    return found


async def eventually(condition: Callable[[], bool], polls: int = 500) -> None:
    """Poll state another process changes, every 10 ms, for at most ``polls`` times."""
    for _ in range(polls):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"still not true after {polls} polls")


def test_bypass_corpus_has_at_least_50_distinct_commands() -> None:
    assert len(set(BYPASS_TEMPLATES)) >= 50


async def test_no_bypass_command_runs_anything_outside_the_allowlist(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    tool = shell_tool(settings(cwd=tmp_path))
    ran_otherwise = []
    for command in bypass_commands(str(canary)):
        output = await call(tool, command=command)
        if canary.exists() or "root:x:0:0" in output or not _literal_or_refused(command, output):
            ran_otherwise.append((command, output))
    assert ran_otherwise == []


def _literal_or_refused(command: str, output: str) -> bool:
    """An error the tool raised before running anything, or echo printing its words."""
    if output.startswith(("command_not_allowed:", "tool_arguments_invalid:")):
        return True
    result = json.loads(output)
    argv = shlex.split(command)
    if argv[0] == "echo":
        return bool(result["output"] == " ".join(argv[1:]) + "\n")
    return argv[0] in ("ls", "true")


async def test_the_canary_is_created_when_its_program_is_allowed(tmp_path: Path) -> None:
    canary = tmp_path / "pwned"
    tool = shell_tool(settings(allowlist=("touch",)))
    result = await invoke(tool, command=f"touch {canary}")
    assert result.exit_code == 0
    assert canary.exists()


async def test_metacharacters_reach_the_program_as_plain_words() -> None:
    result = await invoke(shell_tool(settings()), command="echo a;b | c && $(d) `e` > f")
    assert result == ShellResult(exit_code=0, output="a;b | c && $(d) `e` > f\n")


async def test_program_outside_the_allowlist_is_refused_with_the_allowed_names() -> None:
    with pytest.raises(CommandNotAllowedError, match=r"'cat' is not allowed; allowed: echo"):
        await invoke(shell_tool(settings()), command="cat /etc/passwd")


async def test_exit_code_and_stderr_are_reported(tmp_path: Path) -> None:
    result = await invoke(shell_tool(settings()), command=f"ls {tmp_path / 'missing'}")
    assert result.exit_code != 0
    assert "No such file or directory" in result.output


async def test_commands_run_in_the_configured_directory(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("")
    result = await invoke(shell_tool(settings(cwd=tmp_path)), command="ls")
    assert "marker.txt" in result.output.split()


async def test_output_is_capped_with_a_marker() -> None:
    tool = shell_tool(settings(allowlist=("seq",), max_output_chars=50))
    result = await invoke(tool, command="seq 1 100000")
    assert result.truncated
    assert result.output.endswith(OUTPUT_TRUNCATED)
    assert result.output.startswith("1\n2\n3\n")
    assert len(result.output) == 50 + len(OUTPUT_TRUNCATED) + 1


async def test_environment_holds_only_path_and_allowlisted_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("STUDIO_SECRET_KEY", "django-parent-secret")
    monkeypatch.setenv("GREETING", "hello")
    tool = shell_tool(settings(allowlist=("printenv",), env_allowlist=("GREETING", "UNSET_VAR")))
    result = await invoke(tool, command="printenv")
    assert set(result.output.splitlines()) == {
        "PATH=/usr/local/bin:/usr/bin:/bin",
        "GREETING=hello",
    }


def spawner(bin_dir: Path, name: str, **overrides: Any) -> BaseTool:
    return shell_tool(
        settings(allowlist=(name,), search_path=f"{bin_dir}:/usr/bin:/bin", **overrides)
    )


async def no_survivors(pids: list[int], token: str) -> None:
    await eventually(lambda: not any(_alive(p) for p in pids) and not _running_with(token))


async def test_timeout_kills_the_whole_process_group_background_children_included(
    bin_dir: Path, pidfile: Path, token: str
) -> None:
    with pytest.raises(ToolTimeoutError, match=r"timed out after 0\.5s"):
        await invoke(spawner(bin_dir, "hang", timeout_s=0.5), command=f"hang {pidfile} {token}")
    pids = _pids(pidfile)
    assert len(pids) == 2
    await no_survivors(pids, token)


async def test_background_children_do_not_outlive_a_command_that_exits(
    bin_dir: Path, pidfile: Path, token: str
) -> None:
    async with asyncio.timeout(5):  # the child still holds stdout: we must not wait for it
        result = await invoke(spawner(bin_dir, "detach"), command=f"detach {pidfile} {token}")
    assert result == ShellResult(exit_code=0, output="started\n")
    await no_survivors(_pids(pidfile), token)


async def test_cancelling_the_call_kills_the_process_group(
    bin_dir: Path, pidfile: Path, token: str
) -> None:
    tool = spawner(bin_dir, "hang")
    running = asyncio.create_task(invoke(tool, command=f"hang {pidfile} {token}"))
    await eventually(lambda: len(_pids(pidfile)) == 2)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await no_survivors(_pids(pidfile), token)


async def test_cancelling_while_the_program_starts_still_kills_its_group(
    bin_dir: Path, pidfile: Path, token: str
) -> None:
    tool = spawner(bin_dir, "hang")
    for _ in range(5):
        starting = asyncio.create_task(invoke(tool, command=f"hang {pidfile} {token}"))
        await asyncio.sleep(0)
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting
    await no_survivors(_pids(pidfile), token)


async def test_a_program_that_cannot_start_is_an_execution_error(bin_dir: Path) -> None:
    tool = shell_tool(settings(allowlist=("broken",), search_path=str(bin_dir)))
    with pytest.raises(ToolExecutionError, match="cannot start 'broken'"):
        await invoke(tool, command="broken")


async def test_the_tool_timeout_leaves_room_for_the_command_timeout() -> None:
    tool = shell_tool(settings(timeout_s=2.0))
    assert tool.timeout_s is not None
    assert tool.timeout_s > 2.0


def test_shell_is_disabled_unless_its_settings_enable_it() -> None:
    with pytest.raises(ConfigurationError, match="disabled"):
        shell_tool(ShellSettings(allowlist=("echo",)))


def test_an_enabled_shell_needs_an_allowlist() -> None:
    with pytest.raises(ConfigurationError, match="allowlist"):
        shell_tool(ShellSettings(enabled=True))


@pytest.mark.parametrize("program", ["/bin/ls", "../ls", "bin/ls", "", ".."])
def test_allowlist_takes_bare_program_names_only(program: str) -> None:
    with pytest.raises(ValidationError, match="bare program name"):
        ShellSettings(enabled=True, allowlist=(program,))


@pytest.mark.parametrize("program", ["sh", "bash", "env", "xargs", "sudo", "busybox"])
def test_programs_that_run_other_programs_cannot_be_allowlisted(program: str) -> None:
    with pytest.raises(ValidationError, match="runs other programs"):
        ShellSettings(enabled=True, allowlist=(program,))


@pytest.mark.parametrize("name", ["PATH", "BAD-NAME", "A=B"])
def test_env_allowlist_takes_variable_names_and_never_path(name: str) -> None:
    with pytest.raises(ValidationError, match="cannot be passed through"):
        ShellSettings(enabled=True, allowlist=("ls",), env_allowlist=(name,))


def test_search_path_lists_absolute_directories_only() -> None:
    with pytest.raises(ValidationError, match="absolute"):
        ShellSettings(enabled=True, allowlist=("ls",), search_path="/usr/bin:.")


def test_configured_cwd_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not a directory"):
        shell_tool(settings(cwd=tmp_path / "missing"))


async def test_allowed_program_that_is_not_installed_is_an_execution_error() -> None:
    tool = shell_tool(settings(allowlist=("no-such-program-here",)))
    with pytest.raises(ToolExecutionError, match="allowed but not installed"):
        await invoke(tool, command="no-such-program-here")


def test_settings_round_trip_through_json(tmp_path: Path) -> None:
    original = settings(cwd=tmp_path, env_allowlist=("LANG",), timeout_s=3)
    assert ShellSettings.model_validate(json.loads(original.model_dump_json())) == original


async def test_agent_sees_refusals_as_error_results_and_literal_output_otherwise(
    tmp_path: Path,
) -> None:
    canary = tmp_path / "pwned"
    model = ScriptedModel(
        [
            tool_call("shell", command=f"sh -c 'touch {canary}'"),
            tool_call("shell", command=f"echo ok; touch {canary}"),
            reply("done"),
        ]
    )
    agent = LlmAgent("ops", model=model, tools=[shell_tool(settings())])
    runner = Runner(agent, session_service=InMemorySessionService())
    events = await collect(runner.astream(user_id="u", session_id="s", message="go"))
    responses = tool_responses(events)
    assert responses[0].is_error
    assert responses[0].result.startswith("command_not_allowed: 'sh' is not allowed")
    assert json.loads(responses[1].result)["output"] == f"ok; touch {canary}\n"
    assert not canary.exists()
    assert events[-1].type == EventType.AGENT_END
