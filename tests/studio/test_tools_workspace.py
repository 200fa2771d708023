"""Studio's tools: specs from browsers can only choose harmless settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from agents_core import InMemorySessionService, Runner
from agents_core.builder import build_agent, check_spec
from agents_core.specs import AgentSpec
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from studio.agents.tools import tool_registry, workspace_dir
from tests.studio.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _workspaces(settings: Any, tmp_path: Path) -> Path:
    settings.STUDIO_WORKSPACES_DIR = tmp_path / "workspaces"
    settings.STUDIO_SHELL_ALLOWLIST = []
    return tmp_path


def spec_with(tools: list[dict[str, Any]]) -> AgentSpec:
    return AgentSpec.model_validate({"name": "a", "model": "m", "tools": tools})


def test_a_spec_cannot_choose_the_filesystem_root(ada: User) -> None:
    for settings in ({"root": "/"}, {"root": "/etc", "read_only": True}):
        found = check_spec(
            spec_with([{"name": "filesystem", "settings": settings}]),
            models={"m"},
            tools=tool_registry(ada.pk),
        )
        assert [p.path for p in found] == [("tools", 0, "settings", "root")]


async def test_an_agents_files_tools_see_only_their_owners_workspace(ada: User, bob: User) -> None:
    (workspace_dir(bob.pk) / "diary.txt").write_text("bob's secret")
    (workspace_dir(ada.pk) / "notes.txt").write_text("ada's notes")
    model = ScriptedModel(
        [
            tool_call("read", "r1", path="notes.txt"),
            tool_call("read", "r2", path=f"../{bob.pk}/diary.txt"),
            tool_call("read", "r3", path=str(workspace_dir(bob.pk) / "diary.txt")),
            reply("done"),
        ]
    )
    agent = build_agent(
        spec_with([{"name": "filesystem"}]), models={"m": model}, tools=tool_registry(ada.pk)
    )
    runner = Runner(agent, session_service=InMemorySessionService())

    events = await collect(runner.astream(user_id="ada", session_id="s", message="read"))

    results = [r for e in events for r in e.tool_results]
    assert "ada's notes" in results[0].output
    assert [r.is_error for r in results] == [False, True, True]
    assert not any("bob's secret" in r.output for r in results)


def test_read_only_workspace_leaves_out_the_writing_tools(ada: User) -> None:
    agent = build_agent(
        spec_with([{"name": "filesystem", "settings": {"read_only": True}}]),
        models={"m": ScriptedModel([])},
        tools=tool_registry(ada.pk),
    )
    assert set(agent.tools) == {"ls", "read", "glob", "grep"}  # type: ignore[attr-defined]


def test_there_is_no_shell_unless_the_operator_allowlists_programs(
    ada: User, settings: Any
) -> None:
    assert "shell" not in tool_registry(ada.pk)
    settings.STUDIO_SHELL_ALLOWLIST = ["echo"]
    registry = tool_registry(ada.pk)
    assert "shell" in registry
    found = check_spec(
        spec_with([{"name": "shell", "settings": {"allowlist": ["sh"], "env_allowlist": ["X"]}}]),
        models={"m"},
        tools=registry,
    )
    assert sorted(p.path[-1] for p in found) == ["allowlist", "env_allowlist"]


async def test_the_shell_runs_in_the_owners_workspace_with_the_operators_allowlist(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_SHELL_ALLOWLIST = ["pwd", "echo"]
    model = ScriptedModel(
        [
            tool_call("shell", "c1", command="pwd"),
            tool_call("shell", "c2", command="ls /"),
            reply("ok"),
        ]
    )
    agent = build_agent(
        spec_with([{"name": "shell"}]), models={"m": model}, tools=tool_registry(ada.pk)
    )
    runner = Runner(agent, session_service=InMemorySessionService())

    events = await collect(runner.astream(user_id="ada", session_id="s", message="where?"))

    pwd, ls = [r for e in events for r in e.tool_results]
    assert str(workspace_dir(ada.pk)) in pwd.output
    assert ls.is_error


def test_the_tools_api_lists_what_a_spec_may_name_and_their_settings(ada: User) -> None:
    body = client_for(ada).get("/api/tools/").json()
    by_name = {tool["name"]: tool for tool in body}
    assert set(by_name) == {"a2a", "artifacts", "ask_user", "calculator", "exit_loop", "filesystem"}
    assert set(by_name["a2a"]["settings_schema"]["properties"]) == {"servers"}
    assert set(by_name["filesystem"]["settings_schema"]["properties"]) == {"read_only"}
    assert set(by_name["ask_user"]["settings_schema"]["properties"]) == {"timeout_s"}
