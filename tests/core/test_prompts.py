"""Prompt templates: sandboxed rendering, its bounds, specs that name a template, and
the instruction a run sends the model."""

from __future__ import annotations

import pytest

from agents_core.builder import build_agent, check_spec
from agents_core.llm import ScriptedModel
from agents_core.prompts import (
    MAX_SOURCE_CHARS,
    InMemoryTemplateStore,
    InstructionTemplate,
    PromptTemplate,
    PromptTemplateError,
    check_source,
    render,
)
from agents_core.runner import Runner
from agents_core.sessions import InMemorySessionService
from agents_core.specs import AgentSpec
from agents_core.testing import reply
from agents_core.tools.registry import default_registry
from tests.core.run_helpers import APP, SESSION, USER, stored_events


def test_state_keys_are_variables_and_state_is_the_whole_mapping() -> None:
    source = "Help {{ customer }}.{% if tier == 'gold' %} Be brief.{% endif %} {{ state['a b'] }}"
    assert render(source, {"customer": "Ada", "tier": "gold", "a b": 3}) == "Help Ada. Be brief. 3"


def test_loops_filters_and_plain_methods_work() -> None:
    source = "{% for item in items|sort %}{{ loop.index }}:{{ item.upper() }} {% endfor %}"
    assert render(source, {"items": ["b", "a"]}) == "1:A 2:B "
    assert render("{{ 2 ** 10 }} {{ 'ab' * 2 }} {{ n|round(1) }}", {"n": 2.25}) == "1024 abab 2.2"


def test_an_unknown_variable_is_an_error_naming_it() -> None:
    with pytest.raises(PromptTemplateError, match="'customer' is undefined"):
        render("Help {{ customer }}", {})


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("{{ ''.__class__.__mro__ }}", "unsafe"),
        ("{{ state.__class__ }}", "unsafe"),
        ("{{ items.pop() }}", "unsafe"),
        ("{{ state.update({'x': 1}) }}", "unsafe"),
        ("{{ self.__init__.__globals__ }}", "unsafe"),
        ("{{ '{0.__class__}'.format(items) }}", "str.format is not allowed"),
        ("{{ '%s' % items }}", "'%' formatting is not allowed"),
        ("{{ 'a'.ljust(100000000) }}", "unsafe"),
        ("{{ 'a' * 100000000 }}", "at most 10000 items"),
        ("{{ 9 ** 9 ** 9 ** 9 }}", "base over 1,000,000"),
        ("{{ 2 ** 1000 }}", "exponent over 64"),
        ("{% for i in range(10) %}{% endfor %}", "'range' is undefined"),
        ("{{ lipsum() }}", "'lipsum' is undefined"),
    ],
)
def test_what_reaches_past_the_sandbox_or_its_bounds_is_refused(source: str, says: str) -> None:
    with pytest.raises(PromptTemplateError, match=says):
        render(source, {"items": [1, 2]})


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "may not use macro"),
        ("{% include 'secrets.txt' %}", "may not use include"),
        ("{% extends 'base' %}", "may not use extends"),
        ("{% for a in x recursive %}{{ loop(a) }}{% endfor %}", "recursive loops"),
        ("{% for a in x %}{% for b in x %}{% for c in x %}{% endfor %}{% endfor %}{% endfor %}",
         "nest at most 2"),
        ("{{ 'a'|center(100000000) }}", "No filter named 'center'"),
        ("{{ x|attr('__class__') }}", "No filter named 'attr'"),
        ("{% if %}", "does not compile"),
        ("x" * (MAX_SOURCE_CHARS + 1), "at most"),
    ],
)  # fmt: skip
def test_templates_that_could_not_be_bounded_are_refused_before_they_run(
    source: str, says: str
) -> None:
    with pytest.raises(PromptTemplateError, match=says):
        check_source(source)


def test_output_longer_than_the_bound_is_refused() -> None:
    with pytest.raises(PromptTemplateError, match="longer than"):
        render("{% for a in x %}{% for b in x %}{{ 'y' * 9000 }}{% endfor %}{% endfor %}",
               {"x": list(range(30))})  # fmt: skip


def test_the_store_versions_each_text_and_answers_the_latest_without_a_version() -> None:
    store = InMemoryTemplateStore()
    assert store.add("greet", "v1") == PromptTemplate("greet", 1, "v1")
    store.add("greet", "v2")
    assert store.get("greet") == PromptTemplate("greet", 2, "v2")
    assert store.get("greet", 1) == PromptTemplate("greet", 1, "v1")
    assert store.get("greet", 3) is None and store.get("other") is None
    with pytest.raises(PromptTemplateError):
        store.add("greet", "{{ broken")
    assert store.get("greet") == PromptTemplate("greet", 2, "v2")


def spec_of(**fields: object) -> AgentSpec:
    return AgentSpec.model_validate({"name": "bot", "model": "m", **fields})


def problems(spec: AgentSpec, store: InMemoryTemplateStore) -> list[str]:
    found = check_spec(spec, models={"m"}, tools=default_registry(), templates=store)
    return [str(p) for p in found]


def test_a_spec_names_an_existing_template_and_version_and_does_not_also_write_one() -> None:
    store = InMemoryTemplateStore({"greet": ["Hi {{ name }}"]})
    assert problems(spec_of(instruction_template={"name": "greet"}), store) == []
    assert problems(spec_of(instruction_template={"name": "greet", "version": 2}), store) == [
        "instruction_template.name: no prompt template 'greet' version 2"
    ]
    assert problems(spec_of(instruction_template={"name": "nope"}), store) == [
        "instruction_template.name: no prompt template 'nope'"
    ]
    both = spec_of(instruction="Be kind.", instruction_template={"name": "greet"})
    assert problems(both, store) == [
        "instruction_template: an agent takes its instruction from a template or writes it, "
        "not both"
    ]
    workflow = AgentSpec.model_validate(
        {
            "type": "sequential",
            "name": "flow",
            "instruction_template": {"name": "greet"},
            "sub_agents": [{"name": "bot", "model": "m"}],
        }
    )
    assert "instruction_template: a sequential agent has no instruction_template" in " ".join(
        problems(workflow, store)
    ).replace("; give it to a sub-agent", "")


async def test_a_run_sends_the_template_rendered_with_its_own_session_state() -> None:
    store = InMemoryTemplateStore({"greet": ["old", "You help {{ customer }} ({{ tier }})."]})
    model = ScriptedModel([reply("one"), reply("two")], name="m")
    spec = spec_of(instruction_template={"name": "greet", "version": 2})
    agent = build_agent(spec, models={"m": model}, tools=default_registry(), templates=store)
    sessions = InMemorySessionService()
    await sessions.create_session(
        app_name=APP, user_id=USER, session_id=SESSION, state={"customer": "Ada", "tier": "gold"}
    )
    runner = Runner(agent, session_service=sessions)
    [_ async for _ in runner.astream(user_id=USER, session_id=SESSION, message="hi")]
    assert model.requests[-1].system_instruction == "You help Ada (gold)."

    await sessions.create_session(
        app_name=APP, user_id=USER, session_id="s2", state={"customer": "Bo", "tier": "silver"}
    )
    [_ async for _ in runner.astream(user_id=USER, session_id="s2", message="again")]
    assert model.requests[-1].system_instruction == "You help Bo (silver)."


async def test_a_template_that_fails_at_run_time_ends_the_run_with_an_error_naming_it() -> None:
    store = InMemoryTemplateStore({"greet": ["You help {{ customer }}."]})
    model = ScriptedModel([reply("never")], name="m")
    spec = spec_of(instruction_template={"name": "greet"})
    agent = build_agent(spec, models={"m": model}, tools=default_registry(), templates=store)
    sessions = InMemorySessionService()
    runner = Runner(agent, session_service=sessions)
    [_ async for _ in runner.astream(user_id=USER, session_id=SESSION, message="hi")]
    errors = [e for e in await stored_events(sessions) if e.error is not None]
    assert [e.error.code for e in errors if e.error] == [PromptTemplateError.code]
    assert "template 'greet' v1" in str(errors[0].error and errors[0].error.message)
    assert "'customer' is undefined" in str(errors[0].error and errors[0].error.message)
    assert model.requests == []


def test_an_instruction_template_is_compiled_once_and_names_itself() -> None:
    provider = InstructionTemplate(PromptTemplate("greet", 3, "Hi {{ name }}"))
    assert repr(provider) == "InstructionTemplate('greet' v3)"
