"""Replay: a recorded turn runs again on its recorded replies, results and decisions."""

from __future__ import annotations

import pytest

from agents_core import InMemorySessionService, LlmAgent, Runner, SequentialAgent
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalDecision, UserAnswer
from agents_core.events import Event, EventType
from agents_core.llm.resilience import BreakerRegistry
from agents_core.replay import (
    Recording,
    Replay,
    ReplayError,
    ReplayRunner,
    by_branch,
    comparable,
    is_divergence,
    open_replay,
)
from agents_core.sessions.base import Session
from tests.core.replay_scenarios import (
    SCENARIOS,
    Make,
    MustNotBeCalled,
    call,
    calls,
    say,
    scripted,
)

APP, USER = "agents", "ada"


async def drive(runner: Runner, session_id: str, message: str | Event) -> list[Event]:
    """One turn; people approve every call waiting for them and answer every question
    with "Oslo" (a replay's recorded decisions leave nothing waiting)."""
    events = []
    stream = runner.astream(user_id=USER, session_id=session_id, message=message)
    async for event in stream:
        events.append(event)
        if not runner.approvals.pending_calls(session_id):
            continue
        if event.type is EventType.APPROVAL_REQUEST and event.approval is not None:
            asked = event.approval
            runner.approvals.decide(
                ApprovalDecision(
                    call_id=asked.call_id,
                    args_hash=asked.args_hash,
                    decision="approve",
                    decided_by="ada",
                ),
                session_id=session_id,
            )
        if event.type is EventType.USER_QUESTION and event.question is not None:
            runner.approvals.decide(
                UserAnswer(
                    call_id=event.question.call_id,
                    args_hash=event.question.args_hash,
                    text="Oslo",
                    answered_by="ada",
                ),
                session_id=session_id,
            )
    return events


async def session(sessions: InMemorySessionService, session_id: str) -> Session:
    found = await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id)
    assert found is not None
    return found


async def replay_of(
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    recording: Recording,
    agent: BaseAgent,
    reference: BaseAgent | None = None,
) -> tuple[Replay, Session]:
    replay = Replay(recording)
    runner = ReplayRunner(
        agent, replay=replay, reference=reference, session_service=sessions, breakers=breakers
    )
    message = await open_replay(sessions, recording, app_name=APP, user_id=USER, session_id="r")
    await drive(runner, "r", message)
    return replay, await session(sessions, "r")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_replay_reproduces_every_recorded_scenario_without_model_or_tool(
    name: str, sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    build = SCENARIOS[name]
    recorder = Make(scripted)
    await drive(Runner(build(recorder), session_service=sessions, breakers=breakers), "s", "hi")
    original = await session(sessions, "s")
    assert recorder.effects or name not in {"tools", "approval"}  # the record ran its tools

    silent = MustNotBeCalled()
    replayer = Make(lambda _name, _script: silent)
    replay, replayed = await replay_of(
        sessions, breakers, Recording.of(original.events), build(replayer)
    )

    assert by_branch(comparable(replayed.events)) == by_branch(comparable(original.events))
    assert replayed.state == original.state
    assert (silent.calls, replayer.effects, replay.divergence) == (0, [], None)


async def test_a_later_turn_replays_on_copies_of_the_turns_before_it(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    def build(make: Make) -> BaseAgent:
        script = [
            say("first answer"),
            calls(call("add", "c9", a=1, b=1)),
            say("{last_tool_result}"),
        ]
        return LlmAgent(
            "calc", model=make.model("calc", script), tools=make.tools(), output_key="answer"
        )

    runner = Runner(build(Make(scripted)), session_service=sessions, breakers=breakers)
    await drive(runner, "s", "one")
    await drive(runner, "s", "two")
    original = await session(sessions, "s")

    silent = MustNotBeCalled()
    replay, replayed = await replay_of(
        sessions, breakers, Recording.of(original.events), build(Make(lambda *_: silent))
    )

    assert comparable(replayed.events) == comparable(original.events)
    assert replayed.state == original.state == {"answer": "2"}
    assert replayed.events[0].id != original.events[0].id
    assert (silent.calls, replay.divergence) == (0, None)


async def test_another_version_replays_until_its_first_new_step_then_goes_live(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    build = SCENARIOS["sequential"]
    await drive(
        Runner(build(Make(scripted)), session_service=sessions, breakers=breakers), "s", "hi"
    )
    original = await session(sessions, "s")
    silent = MustNotBeCalled()
    replayer = Make(lambda _name, _script: silent)
    pipeline = build(replayer)
    live_model = scripted("third", [say("a third step, live")])
    for child in pipeline.sub_agents:
        child.parent_agent = None  # adopted by the newer version below
    newer = SequentialAgent(
        "pipeline", sub_agents=[*pipeline.sub_agents, LlmAgent("third", model=live_model)]
    )

    replay, replayed = await replay_of(
        sessions, breakers, Recording.of(original.events), newer, reference=build(Make(scripted))
    )

    assert replay.divergence == "the record has no further model reply for 'third'"
    markers = [i for i, e in enumerate(replayed.events) if is_divergence(e)]
    assert len(markers) == 1
    marker = replayed.events[markers[0]]
    assert marker.text == f"replay diverged here: {replay.divergence}"
    assert (marker.author, marker.error and marker.error.failure) == ("third", "non_fatal")
    # the record up to the pipeline's end, the third agent's start, the marker, then live
    assert comparable(replayed.events[: markers[0] - 1]) == comparable(original.events)[:-1]
    started = replayed.events[markers[0] - 1]
    assert (started.type, started.author) == (EventType.AGENT_START, "third")
    after = replayed.events[markers[0] + 1]
    assert (after.type, after.author, after.text) == (
        EventType.AGENT_MESSAGE,
        "third",
        "a third step, live",
    )
    assert silent.calls == 0 and replayer.effects == []


async def test_a_changed_instruction_diverges_at_the_first_model_call(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    build = SCENARIOS["tools"]
    await drive(
        Runner(build(Make(scripted)), session_service=sessions, breakers=breakers), "s", "hi"
    )
    original = await session(sessions, "s")
    live = Make(scripted)
    changed = build(live)
    assert isinstance(changed, LlmAgent)
    changed.instruction = "Be terse."

    replay, replayed = await replay_of(
        sessions, breakers, Recording.of(original.events), changed, reference=build(Make(scripted))
    )

    assert replay.divergence == "'calc' has another instruction than the recorded version"
    kinds = [e.type for e in replayed.events]
    assert kinds[:3] == [EventType.USER_MESSAGE, EventType.AGENT_START, EventType.ERROR]
    assert live.effects == ["add 2 3"]  # live from there: the real tool ran
    assert replayed.events[-2].text == "It is 5."


async def test_a_recorded_tool_result_the_model_no_longer_reads_makes_the_replay_live(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    build = SCENARIOS["tools"]
    await drive(
        Runner(build(Make(scripted)), session_service=sessions, breakers=breakers), "s", "hi"
    )
    original = await session(sessions, "s")
    # Edit the record: the tool's result now says 6, but the next reply was recorded after 5.
    recording = Recording.of(original.events)
    recording.results["c1"] = recording.results["c1"].__class__(
        "add", "6", False, recording.results["c1"].actions, recording.results["c1"].args
    )
    live = Make(scripted)
    agent = build(live)

    replay, _ = await replay_of(sessions, breakers, recording, agent)

    assert replay.divergence == "'calc' was sent other tool results than recorded"


def test_a_turn_without_a_user_message_cannot_be_replayed() -> None:
    with pytest.raises(ReplayError, match="no user message"):
        Recording.of([])
