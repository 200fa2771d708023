from __future__ import annotations

import io
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from agents_core.evals.contracts import Case
from agents_core.evals.outcome import final_output, tool_calls_of
from studio import services
from studio.agents.demo import DEMO_AGENTS, DEMO_EVAL_CASES, DEMO_EVALS, DEMO_MODEL, MODELS
from studio.diffs.reads import run_events
from studio.models import Agent, AgentVersion, Dataset, Event, ModelConfig, Run, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import make_agent


def run_agent(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("run_agent", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue().splitlines()


@pytest.fixture
def seeded(db: None) -> User:
    call_command("seed_demo", "--force", stdout=io.StringIO())  # tests run with DEBUG off
    # The demo agents' model pauses like a hosted one; here they answer at once.
    ModelConfig.objects.filter(name=DEMO_MODEL).update(options={})
    return User.objects.get(username="demo")


@pytest.mark.django_db
def test_seed_demo_creates_the_demo_user_its_models_and_six_offline_agents(
    seeded: User,
) -> None:
    assert seeded.check_password("demo")
    models = ModelConfig.objects.filter(owner=seeded)
    assert {(m.name, m.provider) for m in models} == {(n, "scripted") for n in MODELS}
    assert {a.spec["model"] for a in Agent.objects.all() if "model" in a.spec} == {DEMO_MODEL}
    assert sorted(Agent.objects.filter(owner=seeded).values_list("name", flat=True)) == sorted(
        name for name, _, _ in DEMO_AGENTS
    )
    agents = Agent.objects.select_related("current_version")
    types = {a.name: (a.spec or {}).get("type", "llm") for a in agents}
    assert types == {
        "calculator": "llm",
        "pipeline": "sequential",
        "fan_out": "parallel",
        "refine_loop": "sequential",
        "helpdesk": "llm",
        "trip_planner": "llm",
    }


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_leaves_edited_agents_alone(seeded: User) -> None:
    agent = Agent.objects.get(owner=seeded, name="calculator")
    agent.description = "edited by the user"
    agent.save()
    counts = (Agent.objects.count(), AgentVersion.objects.count(), ModelConfig.objects.count())
    out = io.StringIO()
    call_command("seed_demo", "--force", stdout=out)
    assert "already present" in out.getvalue()
    assert (
        Agent.objects.count(),
        AgentVersion.objects.count(),
        ModelConfig.objects.count(),
    ) == counts
    assert Agent.objects.get(pk=agent.pk).description == "edited by the user"


@pytest.mark.django_db
def test_seed_demo_refuses_to_run_with_debug_off(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(CommandError, match="DEBUG is off"):
        call_command("seed_demo", stdout=io.StringIO())
    assert not User.objects.filter(username="demo").exists()


@pytest.mark.django_db(transaction=True)
def test_run_agent_runs_the_calculator_demo_and_prints_its_events(seeded: User) -> None:
    lines = run_agent("calculator", "what is (12 + 30) * 2?")
    assert lines[0] == "#1 user_message user · what is (12 + 30) * 2?"
    assert any('→ calculator({"expression": "(12 + 30) * 2"})' in line for line in lines)
    assert any("← calculator: 84" in line for line in lines)
    assert any("The result is 84." in line for line in lines)
    run = Run.objects.get()
    assert (run.status, run.session.owner, run.input_tokens > 0) == ("succeeded", seeded, True)
    assert run.invocation_id and run.started_at and run.ended_at
    assert Session.objects.get().status == "succeeded"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("agent", "message", "expected"),
    [
        ("pipeline", "solar power", ["researcher", "writer", "The final, edited text."]),
        ("fan_out", "a new cafe", ["Upside:", "Risk:", "Next step:", '"next_step"']),
        (
            "refine_loop",
            "a slogan",
            [
                "→ exit_loop({})",
                "Here is the final draft, after review: A polished second draft.",
            ],
        ),
        ("helpdesk", "what is 6 * 7?", ["transfer_to_agent", "The math tutor worked it out: 42"]),
        ("helpdesk", "write a poem about rain", ['{"agent_name": "poet"}', "Roses are red"]),
    ],
)
def test_every_demo_agent_runs_offline_to_success(
    seeded: User, agent: str, message: str, expected: list[str]
) -> None:
    output = "\n".join(run_agent(agent, message))
    for fragment in expected:
        assert fragment in output
    assert Run.objects.get().status == "succeeded"
    # It ends well: on an answer in words, not on a tool call or a tool's result.
    said = [e.to_core() for e in Event.objects.order_by("seq") if e.type != "agent_end"]
    assert said[-1].is_final_response(), said[-1]


@pytest.mark.django_db(transaction=True)
def test_run_agent_prints_wire_json_and_finds_agents_by_id(seeded: User) -> None:
    agent = Agent.objects.get(name="calculator")
    lines = run_agent(str(agent.pk), "1 + 1", "--json")
    events = [json.loads(line) for line in lines]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    session = Session.objects.get()
    assert [e.payload for e in session.events.order_by("seq")] == events


@pytest.mark.django_db(transaction=True)
def test_run_agent_continues_an_existing_session(seeded: User) -> None:
    run_agent("calculator", "1 + 1")
    session = Session.objects.get()
    run_agent("calculator", "2 + 2", "--session", str(session.pk))
    assert Session.objects.count() == 1
    assert session.events.filter(type="user_message").count() == 2


@pytest.mark.django_db
def test_run_agent_explains_an_unknown_or_ambiguous_agent(ada: User, bob: User) -> None:
    with pytest.raises(CommandError, match="no agent 'ghost'"):
        run_agent("ghost", "hi")
    make_agent(ada, "twin")
    make_agent(bob, "twin")
    with pytest.raises(CommandError, match="pass --user"):
        run_agent("twin", "hi")
    with pytest.raises(CommandError, match="no user 'carol'"):
        run_agent("twin", "hi", "--user", "carol")


@pytest.mark.django_db(transaction=True)
def test_run_agent_fails_with_the_runs_error_when_the_agent_no_longer_builds(ada: User) -> None:
    make_agent(ada, "fragile")
    ModelConfig.objects.filter(owner=ada).delete()  # behind the API's back
    with pytest.raises(CommandError, match="run failed: spec_error"):
        run_agent("fragile", "hi", "--user", "ada")
    run = Run.objects.get()
    assert (run.status, run.error_code) == ("failed", "spec_error")
    said, error = run.session.events.order_by("seq")
    assert (said.type, said.text) == ("user_message", "hi")
    assert (error.type, error.payload["error"]["code"]) == ("error", "spec_error")


def test_run_worker_refuses_to_start_unless_runs_go_to_workers() -> None:
    with pytest.raises(CommandError, match="STUDIO_RUN_EXECUTION=worker"):
        call_command("run_worker", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.django_db(transaction=True)
def test_the_demo_evals_dataset_expects_what_the_calculator_demo_answers(seeded: User) -> None:
    """Each seeded case, run on the demo calculator, does exactly what the case expects:
    an eval run of ``demo-evals`` against ``calculator`` passes out of the box."""
    dataset = Dataset.objects.select_related("current_version").get(owner=seeded, name=DEMO_EVALS)
    assert dataset.current_version is not None
    assert dataset.current_version.cases == [
        Case.model_validate(case).model_dump(mode="json") for case in DEMO_EVAL_CASES
    ]
    agent = Agent.objects.get(owner=seeded, name="calculator")
    for case in DEMO_EVAL_CASES:
        session = services.start_session(seeded, agent)
        run = async_to_sync(execute_run)(services.start_run(session, case["input"]["turns"][0]))
        assert run.status == "succeeded"
        events = run_events(run, limit=1_000)
        assert final_output(events) == case["expect"]["final_output"], case["name"]
        calls = [call.model_dump() for call in tool_calls_of(events)]
        assert calls == case["expect"]["tool_calls"], case["name"]
    out = io.StringIO()
    call_command("seed_demo", "--force", stdout=out)
    assert "demo dataset created" not in out.getvalue()
    assert Dataset.objects.filter(owner=seeded).count() == 1
