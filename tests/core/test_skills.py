"""Skills: the folder check, the in-memory store, the skill tools through a real runner,
and the spec field that attaches them."""

from __future__ import annotations

import pytest

from agents_core.builder import build_agent, check_spec
from agents_core.llm import ScriptedModel
from agents_core.runner import Runner
from agents_core.sessions import InMemorySessionService
from agents_core.skills import (
    MAX_FILES,
    MAX_TOTAL_BYTES,
    InMemorySkillStore,
    SkillFormatError,
    check_folder,
    check_path,
    parse_skill_md,
)
from agents_core.specs import AgentSpec
from agents_core.testing import reply, tool_call
from agents_core.tools.registry import default_registry
from tests.core.run_helpers import USER, stored_events

SKILL_MD = (
    b"---\nname: tea-brewing\ndescription: 'Brew tea: use when asked about tea.'\n---\n"
    b"# Brew\nSee steps.md.\n"
)


def _store() -> InMemorySkillStore:
    store = InMemorySkillStore()
    store.add({"tea/SKILL.md": SKILL_MD, "tea/steps.md": b"1. Boil water.", "tea/x/y.txt": b"y"})
    return store


def test_a_folder_under_one_top_folder_is_read_from_there() -> None:
    folder = check_folder({"tea/SKILL.md": SKILL_MD, "tea/steps.md": b"steps"})
    assert (folder.name, folder.description) == (
        "tea-brewing",
        "Brew tea: use when asked about tea.",
    )
    assert folder.body == "# Brew\nSee steps.md."
    assert set(folder.files) == {"SKILL.md", "steps.md"}


@pytest.mark.parametrize(
    "path", ["../x", "a/../../x", "/etc/passwd", "a\\b", "a//b", "./a", "C:/x", "a/\x00", ""]
)
def test_paths_that_could_leave_the_skill_are_refused(path: str) -> None:
    with pytest.raises(SkillFormatError):
        check_path(path)
    with pytest.raises(SkillFormatError):
        check_folder({"SKILL.md": SKILL_MD, path: b"x"})


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "empty"),
        ({f"f{i}.md": b"x" for i in range(MAX_FILES)} | {"SKILL.md": SKILL_MD}, "at most"),
        ({"SKILL.md": SKILL_MD, "big.md": b"x" * MAX_TOTAL_BYTES}, "bytes"),
        ({"SKILL.md": SKILL_MD, "img.png": b"\x89PNG\xff\xfe"}, "not UTF-8"),
        ({"README.md": b"hi"}, "no SKILL.md"),
    ],
)
def test_bad_folders_are_refused_with_a_reason(files: dict[str, bytes], message: str) -> None:
    with pytest.raises(SkillFormatError, match=message):
        check_folder(files)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# no front matter", "must start"),
        ("---\nname: a\ndescription: b\n", "no closing"),
        ("---\nname: Bad_Name\ndescription: b\n---\n", "'name'"),
        (f"---\nname: {'a' * 65}\ndescription: b\n---\n", "'name'"),
        ("---\nname: ok\n---\n", "'description'"),
        (f"---\nname: ok\ndescription: {'d' * 1025}\n---\n", "'description'"),
        ("---\nname: ok\n  nested: 1\ndescription: b\n---\n", "key: value"),
        ("---\nname: ok\nname: again\ndescription: b\n---\n", "twice"),
        ("---\nname: 'ok\ndescription: b\n---\n", "unclosed"),
    ],
)
def test_malformed_front_matter_is_refused(text: str, message: str) -> None:
    with pytest.raises(SkillFormatError, match=message):
        parse_skill_md(text)


async def test_the_store_keeps_versions_and_reads_only_a_skills_own_files() -> None:
    store = _store()
    second = store.add({"SKILL.md": SKILL_MD.replace(b"See", b"Now see")})
    assert second.version == 2 and second.files == ()
    first = store.get("tea-brewing", 1)
    assert first is not None and first.files == ("steps.md", "x/y.txt")
    assert store.get("tea-brewing") == second
    assert store.get("nope") is None and store.get("tea-brewing", 3) is None
    assert await store.read_file("tea-brewing", 1, "steps.md") == "1. Boil water."
    assert await store.read_file("tea-brewing", 2, "steps.md") is None


def _spec(skills: list[dict[str, object]]) -> AgentSpec:
    return AgentSpec.model_validate(
        {"name": "helper", "model": "m", "instruction": "Help.", "skills": skills}
    )


def test_check_spec_names_unknown_and_repeated_skills() -> None:
    spec = _spec([{"name": "tea-brewing"}, {"name": "tea-brewing"}, {"name": "nope", "version": 2}])
    problems = check_spec(spec, models={"m"}, tools=default_registry(), skills=_store())
    assert [(p.path, p.message) for p in problems] == [
        (("skills", 1, "name"), "skill 'tea-brewing' is attached twice"),
        (("skills", 2, "name"), "no skill 'nope' version 2"),
    ]
    with pytest.raises(ValueError, match="pattern"):
        _spec([{"name": "Not A Name"}])
    workflow = AgentSpec.model_validate(
        {"name": "w", "type": "sequential", "skills": [{"name": "tea-brewing"}]}
    )
    assert check_spec(workflow, models={"m"}, tools=default_registry(), skills=_store())


async def test_an_agent_lists_its_skills_up_front_and_loads_one_on_demand() -> None:
    store = _store()
    model = ScriptedModel(
        [
            tool_call("load_skill", name="tea-brewing"),
            tool_call("read_skill_file", name="tea-brewing", path="steps.md"),
            tool_call("read_skill_file", name="tea-brewing", path="../SKILL.md"),
            tool_call("load_skill", name="other"),
            tool_call("list_skills"),
            reply("Boil water."),
        ]
    )
    spec = _spec([{"name": "tea-brewing", "version": 1}])
    agent = build_agent(spec, models={"m": model}, tools=default_registry(), skills=store)
    sessions = InMemorySessionService()
    runner = Runner(agent, session_service=sessions)
    async for _ in runner.astream(user_id=USER, session_id="s", message="tea?"):
        pass
    instruction = model.requests[0].system_instruction or ""
    assert instruction.startswith("Help.\n\nYou have these skills.")
    assert "- tea-brewing: Brew tea: use when asked about tea." in instruction
    assert "# Brew" not in instruction  # the body waits for load_skill
    results = [r for e in await stored_events(sessions, "s") for r in e.tool_results]
    assert results[0].output.startswith("# Brew\nSee steps.md.")
    assert "- steps.md\n- x/y.txt" in results[0].output
    assert (results[1].output, results[1].is_error) == ("1. Boil water.", False)
    assert results[2].is_error and "'..'" in results[2].output
    assert results[3].is_error and "no skill 'other'" in results[3].output
    assert results[4].output == "- tea-brewing: Brew tea: use when asked about tea."
