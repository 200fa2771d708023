"""Runner semantics: what is stored, in which order, and what the model is shown."""

from __future__ import annotations

from agents_core import (
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    RetryPolicy,
    RunConfig,
    ScriptedModel,
    Session,
    function_tool,
)
from agents_core.exceptions import ModelRequestError, ModelServerError
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import reply, tool_call
from tests.core.run_helpers import (
    APP,
    SESSION,
    USER,
    complete,
    make_runner,
    run_turn,
    stored_events,
)

NO_BACKOFF = RetryPolicy(initial_backoff_s=0, max_backoff_s=0)


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calculator(model: ScriptedModel, *, output_key: str | None = None) -> LlmAgent:
    return LlmAgent("calc", model=model, tools=[add], output_key=output_key)


# The user event comes first and names the invocation.


async def test_the_user_message_is_stored_first_and_every_event_shares_its_invocation_id(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("add", a=2, b=3), reply("five")])
    runner = make_runner(calculator(model), sessions, breakers)

    events = await run_turn(runner, "what is 2 + 3?")

    first = events[0]
    assert (first.type, first.author, first.text, first.seq) == (
        EventType.USER_MESSAGE,
        "user",
        "what is 2 + 3?",
        1,
    )
    assert {e.invocation_id for e in events} == {first.invocation_id}
    assert (await stored_events(sessions))[0].id == first.id


async def test_a_second_turn_gets_a_new_invocation_id(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner = make_runner(
        calculator(ScriptedModel([reply("one"), reply("two")])), sessions, breakers
    )

    first = await run_turn(runner, "first")
    second = await run_turn(runner, "second")

    assert len({e.invocation_id for e in first}) == 1
    assert len({e.invocation_id for e in second}) == 1
    assert first[0].invocation_id != second[0].invocation_id


# Stored before yielded; partial events are yielded and never stored.


class RecordingSessions(InMemorySessionService):
    """Logs every append, so a test can interleave it with what the consumer receives."""

    def __init__(self, log: list[tuple[str, str]]) -> None:
        super().__init__()
        self.log = log

    async def append_event(self, session: Session, event: Event) -> Event:
        stored = await super().append_event(session, event)
        self.log.append(("stored", stored.id))
        return stored


async def test_each_complete_event_is_appended_just_before_it_is_yielded(
    breakers: BreakerRegistry,
) -> None:
    log: list[tuple[str, str]] = []
    sessions = RecordingSessions(log)
    model = ScriptedModel([tool_call("add", a=1, b=1), reply("the answer is two")])
    runner = make_runner(calculator(model), sessions, breakers)

    received: list[Event] = []
    async for event in runner.astream(user_id=USER, session_id=SESSION, message="1 + 1?"):
        log.append(("received", event.id))
        received.append(event)

    expected: list[tuple[str, str]] = []
    for event in received:
        if not event.partial:
            expected.append(("stored", event.id))
        expected.append(("received", event.id))
    assert log == expected
    assert any(e.partial for e in received)


async def test_a_received_event_is_already_in_the_store_with_its_seq_and_state(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("add", a=1, b=1), reply("two")])
    runner = make_runner(calculator(model, output_key="answer"), sessions, breakers)

    checked = 0
    async for event in runner.astream(user_id=USER, session_id=SESSION, message="1 + 1?"):
        in_store = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
        assert in_store is not None
        if event.partial:
            assert event.seq is None
            assert event.id not in {e.id for e in in_store.events}
            continue
        assert in_store.events[-1] == event
        assert event.seq == len(in_store.events)
        for key, value in event.actions.state_delta.items():
            assert in_store.state[key] == value
        checked += 1
    assert checked == len(await stored_events(sessions))
    assert (await stored_events(sessions))[-2].actions.state_delta == {"answer": "two"}


async def test_streamed_tokens_are_yielded_as_partials_and_never_stored(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner = make_runner(calculator(ScriptedModel([reply("one two three")])), sessions, breakers)

    events = await run_turn(runner)

    partials = [e for e in events if e.partial]
    assert [e.text for e in partials] == ["one ", "two ", "three"]
    assert all(e.seq is None and e.type is EventType.AGENT_MESSAGE for e in partials)
    stored = await stored_events(sessions)
    assert [e.id for e in stored] == [e.id for e in complete(events)]
    assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
    final = [e for e in stored if e.type is EventType.AGENT_MESSAGE]
    assert [e.text for e in final] == ["one two three"]


# output_key and {key} instructions.


async def test_output_key_saves_the_final_text_through_a_state_delta(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("add", a=2, b=2), reply("four")])
    runner = make_runner(calculator(model, output_key="result"), sessions, breakers)

    events = complete(await run_turn(runner))

    deltas = [(e.type, e.actions.state_delta) for e in events if e.actions.state_delta]
    assert deltas == [(EventType.AGENT_MESSAGE, {"result": "four"})]
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    assert session.state == {"result": "four"}


async def test_instruction_placeholders_are_filled_from_state_and_unknown_ones_stay_literal(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    await sessions.create_session(
        app_name=APP, user_id=USER, session_id=SESSION, state={"name": "Ada", "lang": "fr"}
    )
    model = ScriptedModel([reply("bonjour")])
    agent = LlmAgent(
        "greeter", model=model, instruction="Greet {name} in {lang}; mention {missing}."
    )

    await run_turn(make_runner(agent, sessions, breakers))

    assert model.requests[0].system_instruction == "Greet Ada in fr; mention {missing}."


async def test_state_saved_by_output_key_fills_the_next_turns_instruction(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([reply("blue"), reply("noted")])
    agent = LlmAgent("agent", model=model, instruction="Favourite: {colour}.", output_key="colour")
    runner = make_runner(agent, sessions, breakers)

    await run_turn(runner, "pick a colour")
    await run_turn(runner, "again")

    assert [r.system_instruction for r in model.requests] == [
        "Favourite: {colour}.",
        "Favourite: blue.",
    ]


# Model errors.


async def test_a_retryable_model_error_is_retried_and_the_run_completes(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([ModelServerError("502 bad gateway"), reply("recovered")])
    runner = make_runner(
        calculator(model), sessions, breakers, run_config=RunConfig(retry=NO_BACKOFF)
    )

    events = complete(await run_turn(runner))

    assert len(model.requests) == 2
    assert [e.type for e in events][-2:] == [EventType.AGENT_MESSAGE, EventType.AGENT_END]
    assert events[-2].text == "recovered"
    assert not any(e.type is EventType.ERROR for e in events)


async def test_a_model_request_error_ends_the_run_with_a_terminal_error_event(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([ModelRequestError("400: unknown model"), reply("never sent")])
    runner = make_runner(
        calculator(model), sessions, breakers, run_config=RunConfig(retry=NO_BACKOFF)
    )

    events = await run_turn(runner)

    assert len(model.requests) == 1
    assert [e.type for e in events] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.ERROR,
    ]
    error = events[-1].error
    assert error is not None
    assert (error.code, error.message, error.terminal) == (
        "model_request_error",
        "400: unknown model",
        True,
    )
    assert (await stored_events(sessions))[-1].id == events[-1].id
