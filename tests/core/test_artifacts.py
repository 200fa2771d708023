"""Artifacts: the in-memory service's versions and refusals, the artifact tools and a
function tool saving through its context in a real runner, with the save recorded on
the tool's response."""

from __future__ import annotations

import pytest

from agents_core.artifacts import (
    MAX_NAME_CHARS,
    ArtifactError,
    InMemoryArtifactService,
    checked_content_type,
)
from agents_core.builder import build_agent
from agents_core.events import EventType
from agents_core.llm import ScriptedModel
from agents_core.runner import Runner
from agents_core.sessions import InMemorySessionService
from agents_core.specs import AgentSpec
from agents_core.testing import reply, tool_call
from agents_core.tools import ToolContext, function_tool
from agents_core.tools.registry import default_registry
from tests.core.run_helpers import USER, stored_events


async def test_saving_a_name_again_makes_the_next_version_and_loads_read_either() -> None:
    service = InMemoryArtifactService()
    assert await service.save("s1", "report.md", b"first", "text/markdown") == 1
    assert await service.save("s1", "report.md", b"second", "text/markdown") == 2
    assert await service.save("s1", "chart.png", b"\x89PNG", "image/png") == 1
    assert await service.save("s2", "report.md", b"other session", "text/plain") == 1
    newest = await service.load("s1", "report.md")
    assert newest is not None and newest.data == b"second" and newest.artifact.version == 2
    first = await service.load("s1", "report.md", 1)
    assert first is not None and first.text() == "first"
    assert await service.load("s1", "report.md", 3) is None
    assert await service.load("s1", "missing.txt") is None
    listed = await service.list("s1")
    assert [(a.name, a.version) for a in listed] == [("chart.png", 1), ("report.md", 2)]
    versions = await service.versions("s1", "report.md")
    assert [(v.version, v.size) for v in versions] == [(1, 5), (2, 6)]
    assert versions[0].sha256 != versions[1].sha256


@pytest.mark.parametrize(
    "name",
    ["", "   ", "a/b.txt", "..\\evil", "..", ".", "line\nbreak", "nul\x00", "bidi\u202etxt",
     " padded", "x" * (MAX_NAME_CHARS + 1)],
)  # fmt: skip
async def test_unusable_names_are_refused_and_nothing_is_stored(name: str) -> None:
    service = InMemoryArtifactService()
    with pytest.raises(ArtifactError):
        await service.save("s", name, b"data", "text/plain")
    assert service.stored == {}


async def test_an_oversize_artifact_is_refused_whole_and_the_old_version_stays() -> None:
    service = InMemoryArtifactService(max_bytes=10)
    await service.save("s", "notes.txt", b"small", "text/plain")
    with pytest.raises(ArtifactError, match="at most 10 bytes; this one is 11"):
        await service.save("s", "notes.txt", b"x" * 11, "text/plain")
    assert [v.version for v in await service.versions("s", "notes.txt")] == [1]


def test_content_types_are_checked_and_made_bare() -> None:
    assert checked_content_type("Text/HTML; charset=utf-8") == "text/html"
    for bad in ["", "text", "<script>/x", "a/b/c", "text/plain\nx-evil: 1"]:
        with pytest.raises(ArtifactError):
            checked_content_type(bad)


@function_tool
async def write_report(topic: str, tool_context: ToolContext) -> str:
    """Write a report.

    Args:
        topic: What about.
    """
    version = await tool_context.save_artifact("report.md", f"# {topic}\n", "text/markdown")
    loaded = await tool_context.load_artifact("report.md")
    assert loaded is not None
    return f"wrote v{version}: {loaded.text()!r}"


def _runner(model: ScriptedModel, tools: list[dict[str, str]], service: object) -> Runner:
    spec = AgentSpec.model_validate(
        {"name": "helper", "model": "m", "instruction": "Help.", "tools": tools}
    )
    registry = default_registry()
    registry.register_tool(write_report)
    agent = build_agent(spec, models={"m": model}, tools=registry)
    return Runner(agent, session_service=InMemorySessionService(), artifacts=service)  # type: ignore[arg-type]


async def _events(runner: Runner, session_id: str, message: str) -> list[object]:
    stream = runner.astream(user_id=USER, session_id=session_id, message=message)
    return [event async for event in stream]


async def test_a_function_tool_saves_through_its_context_and_the_response_records_it() -> None:
    service = InMemoryArtifactService()
    model = ScriptedModel(
        [tool_call("write_report", topic="Tea"), tool_call("write_report", topic="Cake"),
         reply("done")]
    )  # fmt: skip
    runner = _runner(model, [{"name": "write_report"}], service)
    await _events(runner, "s", "write it")
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    responses = [e for e in await stored_events(sessions, "s") if e.type is EventType.TOOL_RESPONSE]
    assert [e.actions.artifact_delta for e in responses] == [{"report.md": 1}, {"report.md": 2}]
    assert [r.output for e in responses for r in e.tool_results] == [
        "wrote v1: '# Tea\\n'",
        "wrote v2: '# Cake\\n'",
    ]
    loaded = await service.load("s", "report.md")
    assert loaded is not None and loaded.artifact.content_type == "text/markdown"


async def test_the_artifact_tools_save_list_and_load_and_refusals_reach_the_model() -> None:
    service = InMemoryArtifactService(max_bytes=100)
    model = ScriptedModel(
        [
            tool_call("save_artifact", name="notes.txt", content="<b>bold</b>"),
            tool_call("save_artifact", name="../escape.txt", content="x"),
            tool_call("save_artifact", name="big.txt", content="x" * 101),
            tool_call("list_artifacts"),
            tool_call("load_artifact", name="notes.txt"),
            tool_call("load_artifact", name="notes.txt", version=7),
            reply("ok"),
        ]
    )
    runner = _runner(model, [{"name": "artifacts"}], service)
    await _events(runner, "s", "go")
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    results = [r for e in await stored_events(sessions, "s") for r in e.tool_results]
    assert [(r.name, r.is_error) for r in results] == [
        ("save_artifact", False),
        ("save_artifact", True),
        ("save_artifact", True),
        ("list_artifacts", False),
        ("load_artifact", False),
        ("load_artifact", True),
    ]
    assert results[0].output == "Saved notes.txt v1 (11 bytes)."
    assert "may not contain / or \\" in results[1].output
    assert "at most 100 bytes" in results[2].output
    assert results[3].output == "- notes.txt v1 (text/plain, 11 bytes)"
    assert results[4].output == "<b>bold</b>"
    assert "no artifact 'notes.txt' version 7" in results[5].output
    assert list(service.stored) == [("s", "notes.txt")]


async def test_without_a_service_the_tools_say_so_and_the_run_goes_on() -> None:
    model = ScriptedModel([tool_call("list_artifacts"), reply("ok")])
    runner = _runner(model, [{"name": "artifacts"}], None)
    await _events(runner, "s", "go")
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    (result,) = [r for e in await stored_events(sessions, "s") for r in e.tool_results]
    assert result.is_error and "no artifact service" in result.output
