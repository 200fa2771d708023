"""Long-term memory: the in-memory service, the memory tools through a real runner, key
facts saved at the end of a turn, and the spec option that turns them on."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import pytest

from agents_core.builder import build_agent, build_key_facts, check_spec
from agents_core.events import EventType, TextPart
from agents_core.exceptions import ModelError
from agents_core.llm import BaseLlm, LlmRequest, LlmResponse, ScriptedModel
from agents_core.memory import (
    MAX_KEY_FACTS,
    MAX_MEMORY_CHARS,
    InMemoryMemoryService,
    KeyFacts,
    MemoryConfig,
    MemoryStoreError,
    parse_facts,
)
from agents_core.runner import Runner
from agents_core.sessions import InMemorySessionService
from agents_core.span_contract import KEY_FACTS_FAILED
from agents_core.spans import spans_of
from agents_core.specs import AgentSpec
from agents_core.testing import ScriptedResponse, reply, tool_call
from agents_core.tools.registry import default_registry
from tests.core.run_helpers import USER, stored_events


async def test_search_ranks_by_shared_words_and_stays_with_its_user_and_agent() -> None:
    service = InMemoryMemoryService()
    await service.add("ada", "helper", "Ada drinks green tea", "s1")
    await service.add("ada", "helper", "Ada likes tea and cake with tea", "s1")
    await service.add("ada", "other", "Ada likes tea", "s1")
    await service.add("bob", "helper", "Bob likes tea", "s2")
    found = await service.search("ada", "helper", "green tea", 5)
    assert [m.text for m in found] == ["Ada drinks green tea", "Ada likes tea and cake with tea"]
    assert await service.search("ada", "helper", "coffee", 5) == []
    assert len(await service.search("ada", "helper", "", 1)) == 1


async def test_forget_drops_only_the_users_own_memory() -> None:
    service = InMemoryMemoryService()
    memory = await service.add("ada", "helper", "likes tea", None)
    assert await service.forget("bob", memory.id) is False
    assert await service.forget("ada", memory.id) is True
    assert await service.search("ada", "helper", "tea", 5) == []


@pytest.mark.parametrize("text", ["", "   ", "x" * (MAX_MEMORY_CHARS + 1)])
async def test_empty_or_oversize_memories_are_refused(text: str) -> None:
    with pytest.raises(MemoryStoreError):
        await InMemoryMemoryService().add("ada", "helper", text, None)


def _spec(**memory: bool) -> AgentSpec:
    return AgentSpec.model_validate(
        {"name": "helper", "model": "m", "instruction": "Help.", "memory": memory}
    )


def _runner(model: ScriptedModel, spec: AgentSpec, config: MemoryConfig | None) -> Runner:
    agent = build_agent(spec, models={"m": model}, tools=default_registry())
    return Runner(agent, session_service=InMemorySessionService(), memory=config)


async def _turn(runner: Runner, session_id: str, message: str) -> list[str]:
    stream = runner.astream(user_id=USER, session_id=session_id, message=message)
    return [e.text async for e in stream if e.type is EventType.AGENT_MESSAGE and not e.partial]


async def test_a_memory_remembered_in_one_session_is_recalled_in_the_next() -> None:
    service = InMemoryMemoryService()
    model = ScriptedModel(
        [
            tool_call("remember", text="The user's dog is called Rex"),
            reply("Noted."),
            tool_call("recall", query="dog name"),
            reply("Your dog is {last_tool_result}"),
        ]
    )
    runner = _runner(model, _spec(tools=True), MemoryConfig(service))
    await _turn(runner, "first", "My dog is Rex")
    await _turn(runner, "second", "What is my dog called?")
    assert [(m.user_id, m.agent, m.session_id) for m in service.memories] == [
        (USER, "helper", "first")
    ]
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    events = await stored_events(sessions, "second")
    (recalled,) = [r for e in events for r in e.tool_results if r.name == "recall"]
    assert recalled.output.startswith("- The user's dog is called Rex (id ")
    assert not recalled.is_error


async def test_forget_by_id_and_an_unknown_id_is_an_error_the_model_reads() -> None:
    service = InMemoryMemoryService()
    kept = await service.add(USER, "helper", "likes tea", None)
    model = ScriptedModel(
        [
            tool_call("forget_memory", memory_id="nope"),
            tool_call("forget_memory", memory_id=kept.id),
            reply("Done."),
        ]
    )
    runner = _runner(model, _spec(tools=True), MemoryConfig(service))
    await _turn(runner, "s", "forget it")
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    results = [r for e in await stored_events(sessions, "s") for r in e.tool_results]
    assert results[0].is_error and "no memory with id 'nope'" in results[0].output
    assert not results[1].is_error
    assert service.memories == []


async def test_memory_tools_without_a_service_say_so_and_the_run_goes_on() -> None:
    model = ScriptedModel([tool_call("recall", query="x"), reply("ok")])
    runner = _runner(model, _spec(tools=True), None)
    assert await _turn(runner, "s", "hi") == ["", "ok"]
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    (result,) = [r for e in await stored_events(sessions, "s") for r in e.tool_results]
    assert result.is_error and "no memory service" in result.output


async def test_key_facts_are_saved_when_a_turn_ends_and_bounded() -> None:
    facts = [f"fact {i}" for i in range(MAX_KEY_FACTS + 3)]
    model = ScriptedModel(
        [reply("Hello Ada.")],
        summaries=[ScriptedResponse(text=f"Here: {facts!r}".replace("'", '"'))],
    )
    spec = _spec(tools=False, save_at_end=True)
    key_facts = build_key_facts(spec, models={"m": model})
    assert key_facts == KeyFacts(model=model, agent="helper")
    service = InMemoryMemoryService()
    runner = _runner(model, spec, MemoryConfig(service, key_facts))
    await _turn(runner, "s", "I am Ada")
    assert [m.text for m in service.memories] == facts[:MAX_KEY_FACTS]
    assert {m.session_id for m in service.memories} == {"s"}
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    stored = await stored_events(sessions, "s")
    (saved,) = [e for e in stored if e.type is EventType.MEMORY_SAVED]
    # The call is recorded, with what it found and what it used, after the answer.
    assert [p.text for p in saved.parts if isinstance(p, TextPart)] == facts[:MAX_KEY_FACTS]
    assert saved.author == "helper" and saved.usage is not None and saved.seq == stored[-1].seq
    assert "user: I am Ada" in model.requests[-1].messages[0].text
    assert "remember" not in {t.name for t in model.requests[0].tools}


async def test_a_failing_key_facts_model_leaves_the_turn_as_it_was_and_says_so() -> None:
    model = ScriptedModel([reply("Hi.")], summaries=[ModelError("down")])
    spec = _spec(tools=False, save_at_end=True)
    service = InMemoryMemoryService()
    runner = _runner(model, spec, MemoryConfig(service, build_key_facts(spec, models={"m": model})))
    assert await _turn(runner, "s", "hello") == ["Hi."]
    assert service.memories == []
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    stored = await stored_events(sessions, "s")
    assert EventType.MEMORY_SAVED not in {e.type for e in stored}
    # The failed call is recorded after the turn, on its own span: not fatal.
    failed = stored[-1]
    assert failed.type is EventType.ERROR and failed.error is not None
    assert (failed.error.code, failed.error.failure) == (KEY_FACTS_FAILED, "non_fatal")
    assert failed.error.message == "no key facts were saved: model_error: down"
    assert failed.author == "helper" and stored[-2].type is EventType.AGENT_END
    (span,) = [s for s in spans_of(e.to_wire() for e in stored) if s.span_id == failed.span_id]
    assert (span.name, span.status, span.parent_span_id) == (
        "key facts",
        "error",
        stored[1].span_id,
    )


class _Unclassified(BaseLlm):
    """A model whose failure no adapter classified (an error of its own library)."""

    provider_key = "unclassified"

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        raise RuntimeError("socket closed")
        yield  # an async generator, as a model is


async def test_a_key_facts_model_failing_outside_the_sdk_says_what_it_raised() -> None:
    model = ScriptedModel([reply("Hi.")])
    spec = _spec(tools=False, save_at_end=True)
    config = MemoryConfig(InMemoryMemoryService(), KeyFacts(_Unclassified(), "helper"))
    runner = _runner(model, spec, config)
    assert await _turn(runner, "s", "hello") == ["Hi."]
    sessions = runner.session_service
    assert isinstance(sessions, InMemorySessionService)
    failed = (await stored_events(sessions, "s"))[-1].error
    assert failed is not None and failed.code == KEY_FACTS_FAILED
    assert failed.message == "no key facts were saved: RuntimeError('socket closed')"


def test_facts_come_from_a_json_list_or_else_from_lines() -> None:
    assert parse_facts('["a", 3, " b ", ""]') == ["a", "b"]
    assert parse_facts("- likes tea\n* lives in Oslo\n\n") == ["likes tea", "lives in Oslo"]
    assert parse_facts("[]") == []


def test_memory_is_for_model_agents_and_saving_at_end_for_the_root() -> None:
    spec = AgentSpec.model_validate(
        {
            "name": "root",
            "type": "sequential",
            "memory": {"tools": True},
            "sub_agents": [{"name": "a", "model": "m", "memory": {"save_at_end": True}}],
        }
    )
    problems = check_spec(spec, models={"m"}, tools=default_registry())
    assert {(p.path, p.message.split(";")[0]) for p in problems} == {
        (("memory",), "a sequential agent has no memory"),
        (
            ("sub_agents", 0, "memory", "save_at_end"),
            "saving key facts ends a whole turn: set it on the root agent",
        ),
    }


async def test_key_facts_are_what_the_user_said_and_each_is_stored_once() -> None:
    """The offline demo model's key facts are the user's own words, a fact a message
    (not a compaction digest saying how many messages there were)."""
    model = ScriptedModel([reply("Noted."), reply("Noted again.")])
    spec = _spec(tools=False, save_at_end=True)
    service = InMemoryMemoryService()
    runner = _runner(model, spec, MemoryConfig(service, build_key_facts(spec, models={"m": model})))
    await _turn(runner, "s", "My favourite colour is teal.")
    await _turn(runner, "s", "I live in Lisbon.")
    # The second turn's answer names the first fact again: it is not stored twice.
    assert [m.text for m in service.memories] == [
        "My favourite colour is teal.",
        "I live in Lisbon.",
    ]
