"""SequentialAgent, ParallelAgent, LoopAgent and the branch model they run on."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field

import pytest

from agents_core import (
    BaseAgent,
    BaseLlm,
    Context,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    RunConfig,
    Runner,
    TextPart,
    ToolContext,
)
from agents_core.agents import LoopAgent, ParallelAgent, SequentialAgent
from agents_core.event_filters import is_visible_to_branch
from agents_core.exceptions import ConfigurationError, ModelRequestError
from agents_core.history import INTERRUPTED_RESULT
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.control import exit_loop_tool

SAFETY_TIMEOUT_S = 10  # only a net against a regression hanging the suite; nothing waits on it


class Milestones:
    """A telemetry sink that sets an ``asyncio.Event`` once an agent's message (or error)
    is stored, so a test can make one agent wait on what another has done."""

    def __init__(self) -> None:
        self.spoke: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.failed: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)

    async def on_event(self, event: Event) -> None:
        if event.partial:
            return
        if event.type is EventType.AGENT_MESSAGE:
            self.spoke[event.author].set()
        elif event.type is EventType.ERROR:
            self.failed[event.author].set()


@dataclass
class GatedModel(BaseLlm):
    """Plays a ``ScriptedModel``, but call ``i`` first waits for ``gates[i]`` (if set)."""

    script: ScriptedModel
    gates: Sequence[asyncio.Event | None] = ()
    calls: int = 0
    started: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def provider_key(self) -> str:
        return self.script.provider_key

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        gate = self.gates[self.calls] if self.calls < len(self.gates) else None
        self.calls += 1
        self.started.set()
        if gate is not None:
            await gate.wait()
        async for chunk in self.script.astream(request):
            yield chunk


class InputRecorder(BaseAgent):
    """Answers with a fixed text and records the input it was handed."""

    def __init__(self, name: str, answer: str) -> None:
        super().__init__(name)
        self.answer = answer
        self.inputs: list[str] = []

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        self.inputs.append(ctx.user_input)
        yield ctx.event(EventType.AGENT_MESSAGE, parts=[TextPart(text=self.answer)])


class Crashing(BaseAgent):
    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        yield ctx.event(EventType.AGENT_MESSAGE, parts=[TextPart(text="about to fail")])
        raise RuntimeError("disk on fire")


def noop() -> str:
    """Does nothing, successfully."""
    return "ok"


async def run(
    agent: BaseAgent,
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    *,
    run_config: RunConfig | None = None,
    sink: Milestones | None = None,
) -> list[Event]:
    runner = Runner(
        agent,
        session_service=sessions,
        breakers=breakers,
        run_config=run_config,
        telemetry=[sink] if sink else [],
    )
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        return await collect(runner.astream(user_id="u", session_id="s", message="hi"))


def messages_by(events: list[Event], author: str) -> list[Event]:
    return [e for e in events if e.type is EventType.AGENT_MESSAGE and e.author == author]


def errors(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type is EventType.ERROR]


# --- SequentialAgent -------------------------------------------------------------------


async def test_sequential_agent_hands_each_childs_final_text_to_the_next_child(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    editor_model = ScriptedModel([reply("Roses are red.")])
    first = InputRecorder("first", "draft: roses red")
    writer = LlmAgent("writer", model=ScriptedModel([reply("draft: roses are red")]))
    editor = LlmAgent("editor", model=editor_model)
    last = InputRecorder("last", "published")
    pipeline = SequentialAgent("pipeline", sub_agents=[first, writer, editor, last])

    events = await run(pipeline, sessions, breakers)

    assert first.inputs == ["hi"]
    assert editor_model.requests[0].messages[-1].text == "[writer said] draft: roses are red"
    assert last.inputs == ["Roses are red."]
    finals = [(e.author, e.text) for e in events if e.is_final_response()]
    assert [author for author, _ in finals] == ["first", "writer", "editor", "last"]


async def test_sequential_agent_stops_when_a_child_ends_the_invocation(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    def stop(tool_context: ToolContext) -> str:
        """Ends the whole invocation."""
        tool_context.context.end_invocation = True
        return "stopping"

    gatekeeper_model = ScriptedModel([tool_call("stop")])
    later_model = ScriptedModel([reply("should never run")])
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            LlmAgent("gatekeeper", model=gatekeeper_model, tools=[stop]),
            LlmAgent("later", model=later_model),
        ],
    )

    events = await run(pipeline, sessions, breakers)

    assert len(gatekeeper_model.requests) == 1
    assert later_model.requests == []
    assert not [e for e in events if e.author == "later"]
    assert not errors(events)
    assert (events[-1].type, events[-1].author) == (EventType.AGENT_END, "pipeline")


def test_workflow_agents_need_sub_agents() -> None:
    with pytest.raises(ConfigurationError):
        SequentialAgent("pipeline", sub_agents=[])
    with pytest.raises(ConfigurationError):
        ParallelAgent("fanout", sub_agents=[])
    with pytest.raises(ConfigurationError):
        LoopAgent("loop", sub_agents=[])
    with pytest.raises(ConfigurationError):
        LoopAgent("loop", sub_agents=[InputRecorder("a", "x")], max_iterations=0)


# --- ParallelAgent ---------------------------------------------------------------------


async def test_parallel_agent_runs_each_child_on_its_own_branch(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    fanout = ParallelAgent(
        "fanout",
        sub_agents=[
            LlmAgent("a", model=ScriptedModel([reply("A")], name="a")),
            LlmAgent("b", model=ScriptedModel([reply("B")], name="b")),
        ],
    )

    events = await run(fanout, sessions, breakers)

    branches = {(e.author, e.branch) for e in events if e.author != "user"}
    assert branches == {("fanout", "fanout"), ("a", "fanout.a"), ("b", "fanout.b")}
    assert sorted(e.text for e in events if e.is_final_response()) == ["A", "B"]
    assert (events[-1].type, events[-1].author) == (EventType.AGENT_END, "fanout")


async def test_parallel_agent_merges_events_live_in_arrival_order(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    # a speaks, b answers only once a's message is stored, and a goes on only once b's
    # is: run one after the other, this would deadlock.
    milestones = Milestones()
    a = LlmAgent(
        "a",
        model=GatedModel(
            ScriptedModel([tool_call("noop"), reply("a done")], name="a"),
            gates=[None, milestones.spoke["b"]],
        ),
        tools=[noop],
    )
    b = LlmAgent(
        "b",
        model=GatedModel(ScriptedModel([reply("b done")], name="b"), gates=[milestones.spoke["a"]]),
    )

    events = await run(
        ParallelAgent("fanout", sub_agents=[a, b]), sessions, breakers, sink=milestones
    )

    spoken = [(e.author, e.text) for e in events if e.type is EventType.AGENT_MESSAGE]
    assert spoken == [("a", ""), ("b", "b done"), ("a", "a done")]
    assert [e.seq for e in events] == sorted(e.seq for e in events)


async def test_parallel_child_sees_its_own_tool_results_on_its_next_model_call(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    models = {
        name: ScriptedModel([tool_call("noop"), reply("{last_tool_result}")], name=name)
        for name in ("a", "b")
    }
    fanout = ParallelAgent(
        "fanout",
        sub_agents=[LlmAgent(n, model=m, tools=[noop]) for n, m in models.items()],
    )

    events = await run(fanout, sessions, breakers)

    for model in models.values():
        tool_messages = [m.text for m in model.requests[1].messages if m.role == "tool"]
        assert tool_messages == ["ok"]
        assert INTERRUPTED_RESULT not in tool_messages
    assert [e.text for e in events if e.is_final_response()] == ["ok", "ok"]


async def test_parallel_agent_turns_a_failing_child_into_an_error_event_and_finishes_the_others(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    milestones = Milestones()
    failing = LlmAgent(
        "failing", model=ScriptedModel([ModelRequestError("bad request")], name="failing")
    )
    late = LlmAgent(  # answers only after both failures are stored
        "late",
        model=GatedModel(
            ScriptedModel([tool_call("noop"), reply("late but fine")], name="late"),
            gates=[milestones.failed["failing"], milestones.failed["crashing"]],
        ),
        tools=[noop],
    )
    fanout = ParallelAgent("fanout", sub_agents=[failing, Crashing("crashing"), late])

    events = await run(fanout, sessions, breakers, sink=milestones)

    failures = {e.author: (e.branch, e.error) for e in errors(events)}
    assert set(failures) == {"failing", "crashing"}
    branch, error = failures["failing"]
    assert branch == "fanout.failing"
    assert error is not None
    assert (error.code, error.failure) == ("model_request_error", "non_fatal")
    branch, error = failures["crashing"]
    assert branch == "fanout.crashing"
    assert error is not None
    assert error.code == "internal_error"
    assert "disk on fire" in error.message
    assert messages_by(events, "late")[-1].text == "late but fine"
    assert (events[-1].type, events[-1].author) == (EventType.AGENT_END, "fanout")


async def test_parallel_agent_never_hangs_when_a_child_reaches_a_run_limit(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    busy = [
        LlmAgent(n, model=ScriptedModel([tool_call("noop")], name=n, loop=True), tools=[noop])
        for n in ("a", "b")
    ]

    events = await run(
        ParallelAgent("fanout", sub_agents=busy),
        sessions,
        breakers,
        run_config=RunConfig(max_steps=3),
    )

    last = events[-1]
    assert last.is_terminal_error
    assert last.error is not None
    assert (last.error.code, last.error.limit) == ("limit_exceeded", "max_steps")
    assert len(errors(events)) == 1
    assert len([e for e in events if e.type is EventType.AGENT_MESSAGE]) == 3


async def test_siblings_do_not_see_each_other_but_a_later_step_sees_them_all(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    milestones = Milestones()
    a_model = GatedModel(  # a's second call comes after b has spoken
        ScriptedModel([tool_call("noop"), reply("A")], name="a"),
        gates=[None, milestones.spoke["b"]],
    )
    b_model = ScriptedModel([reply("B")], name="b")
    summary_model = ScriptedModel([reply("A and B")], name="summary")
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            ParallelAgent(
                "research",
                sub_agents=[
                    LlmAgent("a", model=a_model, tools=[noop]),
                    LlmAgent("b", model=b_model),
                ],
            ),
            LlmAgent("summary", model=summary_model),
        ],
    )

    events = await run(pipeline, sessions, breakers, sink=milestones)

    a_second_request = a_model.script.requests[1]
    assert not any("[b said]" in m.text for m in a_second_request.messages)
    assert [m.text for m in b_model.requests[0].messages] == ["hi"]
    seen_by_summary = [m.text for m in summary_model.requests[0].messages]
    assert seen_by_summary == ["hi", "[b said] B", "[a said] A"]
    assert {e.branch for e in events if e.author in ("a", "b")} == {"pipeline.a", "pipeline.b"}
    assert messages_by(events, "summary")[0].branch == "pipeline"


# --- LoopAgent -------------------------------------------------------------------------


def all_agents_closed(events: list[Event]) -> bool:
    """Every agent_start has a matching agent_end (same author and branch)."""
    opened: list[tuple[str, str | None]] = []
    for event in events:
        key = (event.author, event.branch)
        if event.type is EventType.AGENT_START:
            opened.append(key)
        elif event.type is EventType.AGENT_END:
            opened.remove(key)
    return not opened


async def test_loop_agent_stops_at_the_first_escalation_with_a_branch_per_iteration(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    worker_model = ScriptedModel([reply("v1"), reply("v2"), reply("v3")], name="worker")
    critic_model = ScriptedModel([reply("try again"), tool_call("exit_loop")], name="critic")
    loop = LoopAgent(
        "refine",
        sub_agents=[
            LlmAgent("worker", model=worker_model),
            LlmAgent("critic", model=critic_model, tools=[exit_loop_tool]),
        ],
        max_iterations=5,
    )

    events = await run(loop, sessions, breakers)

    assert len(worker_model.requests) == 2
    assert len(critic_model.requests) == 2
    escalation = next(e for e in events if e.actions.escalate)
    assert (escalation.type, escalation.author) == (EventType.TOOL_RESPONSE, "critic")
    closing = events[events.index(escalation) + 1 :]
    assert [(e.type, e.author) for e in closing] == [
        (EventType.AGENT_END, "critic"),
        (EventType.AGENT_END, "refine"),
    ]
    assert all_agents_closed(events)
    assert not errors(events)
    assert [e.branch for e in messages_by(events, "worker")] == [
        "refine.refine@1",
        "refine.refine@2",
    ]
    # each pass starts clean, but within a pass the critic sees the worker
    assert [m.text for m in worker_model.requests[1].messages] == ["hi"]
    assert [m.text for m in critic_model.requests[1].messages] == ["hi", "[worker said] v2"]


async def test_loop_agent_emits_a_non_fatal_error_when_it_runs_out_of_iterations(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    worker_model = ScriptedModel([reply("again")], loop=True)
    after = InputRecorder("after", "carried on")
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            LoopAgent(
                "loop", sub_agents=[LlmAgent("worker", model=worker_model)], max_iterations=3
            ),
            after,
        ],
    )

    events = await run(pipeline, sessions, breakers)

    assert len(worker_model.requests) == 3
    [error_event] = errors(events)
    assert error_event.author == "loop"
    assert error_event.error is not None
    assert error_event.error.code == "loop_limit_reached"
    assert error_event.error.failure == "non_fatal"
    assert error_event.error.limit == "max_iterations"
    assert after.inputs == ["again"]


async def test_loop_agent_stops_a_parallel_step_whose_child_escalates(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    never = asyncio.Event()
    stuck_model = GatedModel(ScriptedModel([reply("never")], name="stuck"), gates=[never])
    loop = LoopAgent(
        "loop",
        sub_agents=[
            ParallelAgent(
                "fanout",
                sub_agents=[
                    LlmAgent(
                        "quitter",
                        model=GatedModel(
                            ScriptedModel([tool_call("exit_loop")], name="quitter"),
                            gates=[stuck_model.started],
                        ),
                        tools=[exit_loop_tool],
                    ),
                    LlmAgent("stuck", model=stuck_model),
                ],
            )
        ],
    )

    events = await run(loop, sessions, breakers)

    assert stuck_model.calls == 1
    assert not messages_by(events, "stuck")
    assert not errors(events)
    escalation = next(e for e in events if e.actions.escalate)
    closing = events[events.index(escalation) + 1 :]
    assert {e.type for e in closing} == {EventType.AGENT_END}
    assert [e.author for e in closing][-2:] == ["fanout", "loop"]
    assert all_agents_closed(events)


async def test_exit_loop_rejects_arguments(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("exit_loop", reason="done"), reply("ok")])
    events = await run(LlmAgent("solo", model=model, tools=[exit_loop_tool]), sessions, breakers)

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert response.tool_results[0].is_error
    assert not response.actions.escalate
    assert len(model.requests) == 2


# --- Branch visibility -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("event_branch", "viewer", "visible"),
    [
        (None, "root.a", True),  # the user's messages
        ("root.a", "root.a", True),
        ("root", "root.a", True),  # an ancestor
        ("root.a.x", "root.a", True),  # a descendant
        ("root.b", "root.a", False),  # a sibling
        ("root.ab", "root.a", False),  # a name that merely starts the same
        ("root.loop@1", "root.loop@2", False),
    ],
)
def test_an_agent_sees_only_its_own_line_of_the_branch_tree(
    event_branch: str | None, viewer: str, visible: bool
) -> None:
    event = Event(
        type=EventType.AGENT_MESSAGE,
        invocation_id="i",
        session_id="s",
        author="x",
        branch=event_branch,
        parts=[TextPart(text="t")],
    )
    assert is_visible_to_branch(event, viewer) is visible
