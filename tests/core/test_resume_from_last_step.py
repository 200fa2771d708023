"""Resuming an interrupted turn from its last completed step (``agents_core.resume``).

Each test runs a real turn until the moment a process would die, then keeps only what
was stored by then (a new session service holding copies, closed the way Studio's
recovery closes an interrupted run), and resumes it with ``astream(message=None)`` on
a fresh agent tree: finished workflow children are skipped, calls closed ``not_run``
are retried, calls closed ``in_doubt`` never run again and their tool's failure policy
says what follows."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

import pytest

from agents_core import (
    BaseAgent,
    InMemorySessionService,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    ScriptedModel,
    SequentialAgent,
    function_tool,
)
from agents_core.events import ErrorInfo, Event, EventType, ToolCallPart
from agents_core.failures import degradations
from agents_core.ledger import CallLedger
from agents_core.llm.resilience import BreakerRegistry
from agents_core.llm.scripted import ScriptedResponse, ScriptedToolCall
from agents_core.spans import spans_of
from agents_core.testing import collect, reply, tool_call
from agents_core.tools.base import BaseTool
from tests.core.run_helpers import APP, SESSION, USER, make_runner

LOST_STARTED = "in_doubt: the process died while this call ran"
LOST_NOT_RUN = "not_run: the process died before this call started"


@dataclass
class Effects:
    """What the tools did, across the crashed process and the resumed one. ``send`` has
    side effects; ``lookup`` is read-only. Either blocks while its argument is listed in
    ``blocking``, as a call that is running when the process dies."""

    sent: list[str] = field(default_factory=list)
    looked_up: list[str] = field(default_factory=list)
    blocking: set[str] = field(default_factory=set)

    def tools(self) -> list[BaseTool]:
        @function_tool
        async def send(to: str) -> str:
            """Send a message."""
            self.sent.append(to)
            await self._maybe_block(to)
            return f"sent to {to}"

        @function_tool(side_effects=False)
        async def lookup(key: str) -> str:
            """Look a key up."""
            self.looked_up.append(key)
            await self._maybe_block(key)
            return f"found {key}"

        return [send, lookup]

    async def _maybe_block(self, arg: str) -> None:
        if arg in self.blocking:
            await asyncio.Event().wait()


def calls(*made: tuple[str, str, str]) -> ScriptedResponse:
    """A model turn that makes the tool calls ``(call_id, tool, argument)``."""
    key = {"send": "to", "lookup": "key"}
    return ScriptedResponse(
        tool_calls=[ScriptedToolCall(id=i, name=n, args={key[n]: a}) for i, n, a in made]
    )


async def crash_when(
    agent: BaseAgent, breakers: BreakerRegistry, until: Callable[[list[Event]], bool]
) -> InMemorySessionService:
    """Run a turn of ``agent`` until ``until`` holds, then lose the process: the
    returned session service holds only what was stored by then, closed as Studio's
    recovery closes an interrupted run (``survivors``)."""
    runner = make_runner(agent, InMemorySessionService(), breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="go")
    return await survivors(await lose_process(stream, until), agent.name)


async def lose_process(
    stream: AsyncGenerator[Event], until: Callable[[list[Event]], bool]
) -> list[Event]:
    """The events ``stream`` stored by the moment ``until`` holds of them (and of what
    the tools did), checked as events arrive and while a tool runs; then the stream
    is stopped, and its own clean-up is not part of what survived."""
    stored: list[Event] = []

    async def consume() -> None:
        async for event in stream:
            if not event.partial:
                stored.append(event)

    consuming = asyncio.create_task(consume())
    async with asyncio.timeout(10):
        while not until(stored):
            assert not consuming.done(), "the turn ended before the moment to crash"
            await asyncio.sleep(0.001)
    survived = list(stored)
    consuming.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await consuming
    await stream.aclose()
    return survived


async def survivors(stored: Sequence[Event], root: str) -> InMemorySessionService:
    """A session service holding copies of ``stored``, each open call closed (in doubt
    when the journal says it started) and a terminal ``interrupted`` error last."""
    survived = InMemorySessionService()
    session = await survived.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    for event in stored:
        await survived.append_event(session, event.model_copy(update={"seq": None}))
    ledger = CallLedger().observe_all(stored)
    for closing in ledger.closing_events(SESSION, started=LOST_STARTED, not_run=LOST_NOT_RUN):
        await survived.append_event(session, closing)
    error = ErrorInfo(code="interrupted", message="the process died", failure="terminal")
    interrupted = Event(
        type=EventType.ERROR,
        invocation_id=stored[-1].invocation_id,
        session_id=SESSION,
        author=root,
        branch=root,
        error=error,
    )
    await survived.append_event(session, interrupted)
    return survived


async def resume(
    agent: BaseAgent, sessions: InMemorySessionService, breakers: BreakerRegistry
) -> list[Event]:
    runner = make_runner(agent, sessions, breakers)
    return await collect(runner.astream(user_id=USER, session_id=SESSION, message=None))


def responded(call_id: str) -> Callable[[list[Event]], bool]:
    return lambda events: any(r.call_id == call_id for e in events for r in e.tool_results)


def started(call_id: str) -> Callable[[list[Event]], bool]:
    def seen(events: list[Event]) -> bool:
        return any(
            e.type is EventType.TOOL_STARTED and p.call_id == call_id
            for e in events
            for p in e.parts
            if isinstance(p, ToolCallPart)
        )

    return seen


def both(*conditions: Callable[[list[Event]], bool]) -> Callable[[list[Event]], bool]:
    return lambda events: all(condition(events) for condition in conditions)


def retried(events: Sequence[Event]) -> list[ToolCallPart]:
    return [
        p
        for e in events
        if e.type is EventType.AGENT_MESSAGE
        for p in e.parts
        if isinstance(p, ToolCallPart) and p.retry_of
    ]


def mailer(model: ScriptedModel, effects: Effects, **options: object) -> LlmAgent:
    return LlmAgent("mailer", model=model, tools=effects.tools(), **options)  # type: ignore[arg-type]


async def test_calls_that_never_started_run_again_and_a_started_side_effect_never_does(
    breakers: BreakerRegistry,
) -> None:
    effects = Effects(blocking={"bob", "x"})
    first = ScriptedModel(
        [calls(("c1", "send", "ada")), calls(("c2", "send", "bob"), ("c3", "lookup", "x"))]
    )
    # A round's results are stored once all its calls are done: c1's round is over, and
    # the process dies while c2 and c3 of the next round run.
    until = both(responded("c1"), started("c2"), lambda _: effects.looked_up == ["x"])
    sessions = await crash_when(mailer(first, effects), breakers, until)

    effects.blocking.clear()
    model = ScriptedModel([reply("ada got it; bob is in doubt; x is found")])
    out = await resume(mailer(model, effects), sessions, breakers)

    assert effects.sent == ["ada", "bob"]  # neither send ran again
    assert effects.looked_up == ["x", "x"]  # the read-only call that was lost ran again
    [again] = retried(out)
    assert (again.retry_of, again.name, again.args) == ("c3", "lookup", {"key": "x"})
    assert again.call_id not in {"c1", "c2", "c3"}
    assert [r.output for e in out for r in e.tool_results] == ["found x"]
    # In the waterfall: one model span (the answer), and the retry a tool span of its own.
    spans = spans_of(e.to_wire() for e in out)
    assert [s.kind for s in spans] == ["agent", "tool", "model"]
    assert spans[1].attributes["retry_of"] == "c3" and spans[1].status == "ok"
    assert spans[1].parent_span_id == spans[0].span_id
    assert out[-1].type is EventType.AGENT_END and out[-2].text.startswith("ada got it")
    seen = [(m.role, m.text, m.tool_call_id) for m in model.requests[0].messages]
    assert seen[1:] == [
        ("assistant", "", None),
        ("tool", "sent to ada", "c1"),
        ("assistant", "", None),
        ("tool", LOST_STARTED, "c2"),
        ("tool", LOST_NOT_RUN, "c3"),
        ("assistant", "", None),
        ("tool", "found x", again.call_id),
    ]


async def test_a_call_in_doubt_whose_failure_policy_is_fail_ends_the_resumed_turn_first(
    breakers: BreakerRegistry,
) -> None:
    effects = Effects(blocking={"bob", "x"})
    first = ScriptedModel([calls(("c2", "send", "bob"), ("c3", "lookup", "x"))])
    until = both(started("c2"), lambda _: effects.looked_up == ["x"])
    sessions = await crash_when(mailer(first, effects), breakers, until)

    effects.blocking.clear()
    model = ScriptedModel([reply("never asked")])
    out = await resume(mailer(model, effects, tool_failures={"send": "fail"}), sessions, breakers)

    assert effects.sent == ["bob"] and effects.looked_up == ["x"]  # nothing retried
    assert model.requests == []
    assert out[-1].is_terminal_error and out[-1].error is not None
    assert out[-1].error.code == "in_doubt"
    assert "'send' (call c2) may or may not have taken effect" in out[-1].error.message


async def test_a_call_in_doubt_whose_failure_policy_is_degrade_marks_the_run_degraded(
    breakers: BreakerRegistry,
) -> None:
    effects = Effects(blocking={"bob"})
    first = ScriptedModel([calls(("c2", "send", "bob"))])
    sessions = await crash_when(mailer(first, effects), breakers, started("c2"))

    model = ScriptedModel([reply("bob may have it")])
    agent = mailer(model, effects, tool_failures={"send": "degrade"})
    out = await resume(agent, sessions, breakers)

    assert effects.sent == ["bob"]
    [failure] = degradations(out)
    assert failure.code == "in_doubt" and failure.failure == "non_fatal"
    assert out[-2].text == "bob may have it"
    assert retried(out) == []


async def test_a_pipeline_skips_the_steps_that_finished_and_hands_on_their_answer(
    breakers: BreakerRegistry,
) -> None:
    effects = Effects(blocking={"x"})
    drafting = ScriptedModel([reply("the draft")])
    checking = ScriptedModel([tool_call("lookup", "c1", key="x")])
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            LlmAgent("drafter", model=drafting),
            LlmAgent("checker", model=checking, tools=effects.tools()),
        ],
    )
    sessions = await crash_when(pipeline, breakers, lambda _: effects.looked_up == ["x"])

    effects.blocking.clear()
    drafting_again = ScriptedModel([reply("a second draft")])
    checking_again = ScriptedModel([reply("checked: {last_tool_result}")])
    resumed = SequentialAgent(
        "pipeline",
        sub_agents=[
            LlmAgent("drafter", model=drafting_again),
            LlmAgent("checker", model=checking_again, tools=effects.tools()),
        ],
    )
    out = await resume(resumed, sessions, breakers)

    assert drafting_again.requests == []  # the finished step is not run again
    assert [e.author for e in out if e.type is EventType.AGENT_START] == ["pipeline", "checker"]
    assert out[-3].text == "checked: found x"
    texts = [m.text for m in checking_again.requests[0].messages]
    assert texts.count("[drafter said] the draft") + texts.count("the draft") == 1


async def test_parallel_branches_that_finished_are_skipped(breakers: BreakerRegistry) -> None:
    effects = Effects(blocking={"x"})
    fast, slow = ScriptedModel([reply("fast done")]), ScriptedModel([tool_call("lookup", key="x")])
    fan = ParallelAgent(
        "fan",
        sub_agents=[
            LlmAgent("fast", model=fast),
            LlmAgent("slow", model=slow, tools=effects.tools()),
        ],
    )

    def fast_ended(events: list[Event]) -> bool:
        ended = any(e.type is EventType.AGENT_END and e.author == "fast" for e in events)
        return ended and effects.looked_up == ["x"]

    sessions = await crash_when(fan, breakers, fast_ended)

    effects.blocking.clear()
    fast_again, slow_again = ScriptedModel([reply("again")]), ScriptedModel([reply("slow done")])
    resumed = ParallelAgent(
        "fan",
        sub_agents=[
            LlmAgent("fast", model=fast_again),
            LlmAgent("slow", model=slow_again, tools=effects.tools()),
        ],
    )
    out = await resume(resumed, sessions, breakers)

    assert fast_again.requests == []
    assert [p.name for p in retried(out)] == ["lookup"]
    assert any(e.author == "slow" and e.text == "slow done" for e in out)


async def test_a_loop_goes_on_from_the_pass_and_step_it_was_in(breakers: BreakerRegistry) -> None:
    effects = Effects(blocking={"2"})
    writer = ScriptedModel([reply("w1"), reply("w2")])
    checker = ScriptedModel(
        [tool_call("lookup", key="1"), reply("c1"), tool_call("lookup", key="2")]
    )

    def loop(writing: ScriptedModel, checking: ScriptedModel) -> LoopAgent:
        return LoopAgent(
            "rounds",
            max_iterations=3,
            sub_agents=[
                LlmAgent("writer", model=writing),
                LlmAgent("checker", model=checking, tools=effects.tools()),
            ],
        )

    sessions = await crash_when(loop(writer, checker), breakers, lambda _: "2" in effects.looked_up)

    effects.blocking.clear()
    writer_again = ScriptedModel([reply("w3")])
    checker_again = ScriptedModel([reply("c2"), reply("c3")])
    out = await resume(loop(writer_again, checker_again), sessions, breakers)

    assert effects.looked_up == ["1", "2", "2"]
    assert len(writer_again.requests) == 1  # only pass 3's: passes 1 and 2 wrote already
    assert len(checker_again.requests) == 2  # the rest of pass 2, then pass 3
    branches = [e.branch for e in out if e.type is EventType.AGENT_START and e.author != "rounds"]
    assert branches == ["rounds.rounds@2", "rounds.rounds@3", "rounds.rounds@3"]


async def test_a_turn_that_had_finished_resumes_to_nothing(breakers: BreakerRegistry) -> None:
    model = ScriptedModel([reply("all done")])
    sessions = await crash_when(
        LlmAgent("mailer", model=model),
        breakers,
        lambda events: bool(events) and events[-1].type is EventType.AGENT_END,
    )
    again = ScriptedModel([reply("said twice")])
    assert await resume(LlmAgent("mailer", model=again), sessions, breakers) == []
    assert again.requests == []


async def test_a_resumed_turn_interrupted_again_resumes_from_where_the_second_stopped(
    breakers: BreakerRegistry,
) -> None:
    effects = Effects(blocking={"x"})

    def pipeline(drafting: ScriptedModel, checking: ScriptedModel) -> SequentialAgent:
        return SequentialAgent(
            "pipeline",
            sub_agents=[
                LlmAgent("drafter", model=drafting),
                LlmAgent("checker", model=checking, tools=effects.tools()),
            ],
        )

    first = pipeline(ScriptedModel([reply("draft")]), ScriptedModel([tool_call("lookup", key="x")]))
    sessions = await crash_when(first, breakers, lambda _: effects.looked_up == ["x"])
    # The resumed turn retries the lookup, which blocks again: the process dies again.
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    prior = list(session.events)
    runner = make_runner(pipeline(ScriptedModel([]), ScriptedModel([])), sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message=None)
    second = await lose_process(stream, lambda _: effects.looked_up == ["x", "x"])
    sessions = await survivors([*prior, *second], "pipeline")

    effects.blocking.clear()
    drafting = ScriptedModel([reply("another draft")])
    out = await resume(pipeline(drafting, ScriptedModel([reply("checked")])), sessions, breakers)

    assert drafting.requests == []  # finished in the first invocation: still skipped
    assert effects.looked_up == ["x", "x", "x"]
    assert out[-3].text == "checked"


@pytest.mark.parametrize("policy", ["continue", None])
async def test_without_a_fail_or_degrade_policy_the_model_reads_the_doubt(
    breakers: BreakerRegistry, policy: str | None
) -> None:
    effects = Effects(blocking={"bob"})
    sessions = await crash_when(
        mailer(ScriptedModel([calls(("c2", "send", "bob"))]), effects), breakers, started("c2")
    )
    failures = {"send": policy} if policy else None
    model = ScriptedModel([reply("{last_tool_result}")])
    out = await resume(mailer(model, effects, tool_failures=failures), sessions, breakers)

    assert effects.sent == ["bob"]
    assert [e.type for e in out if e.type is EventType.ERROR] == []
    assert out[-2].text == LOST_STARTED
