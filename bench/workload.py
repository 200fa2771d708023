"""The turn every core benchmark runs: one ``LlmAgent`` with one trivial function tool
and a zero-latency ``ScriptedModel``. Each user turn is a tool call, the tool, and a
final answer: six stored events (user message, agent start, tool call, tool response,
answer, agent end) and one partial text chunk.

The model decides from the request (call the tool unless its result is the last
message), so concurrent sessions sharing it each get the same turn. It states token
usage itself, so no per-call word counting of the history is charged to the runner.
"""

from __future__ import annotations

from collections.abc import Sequence

from agents_core import (
    BaseLlm,
    BaseSessionService,
    Event,
    FunctionTool,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    Runner,
    ScriptedModel,
    ScriptedResponse,
    Usage,
)
from agents_core.events import new_id, utc_now
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedToolCall

USER = "bench"
QUESTION = "What is the weather in Paris?"
INSTRUCTION = "Answer weather questions."
EVENTS_PER_TURN = 6
_USAGE = Usage(input_tokens=10, output_tokens=2)


async def lookup_weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: The city to look up.
    """
    return "sunny"


def respond(request: LlmRequest) -> ScriptedResponse:
    """Call the tool, then answer once its result is the last message."""
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role == "tool":
        return ScriptedResponse(text=last.text.capitalize(), usage=_USAGE)
    call = ScriptedToolCall(name="lookup_weather", args={"city": "Paris"})
    return ScriptedResponse(tool_calls=[call], usage=_USAGE)


def make_runner(
    session_service: BaseSessionService | None = None, *, model: BaseLlm | None = None
) -> Runner:
    """A runner for the benchmark agent; by default on the scripted model."""
    model = model or ScriptedModel([respond], loop=True)
    lookup = FunctionTool(lookup_weather, side_effects=False)  # read-only: not journalled
    agent = LlmAgent("assistant", model=model, instruction=INSTRUCTION, tools=[lookup])
    return Runner(
        agent,
        session_service=session_service or InMemorySessionService(),
        breakers=BreakerRegistry(),
    )


async def run_turn(runner: Runner, session_id: str, message: str = QUESTION) -> int:
    """Run one user turn to its end; returns the number of events it yielded."""
    count = 0
    async for _ in runner.astream(user_id=USER, session_id=session_id, message=message):
        count += 1
    # ScriptedModel keeps every request for test assertions; a benchmark must not let
    # that list (each request holding the whole history) grow with the run.
    model = getattr(runner.agent, "model", None)
    if isinstance(model, ScriptedModel):
        model.requests.clear()
    return count


def clone_turn(template: Sequence[Event], number: int) -> list[Event]:
    """A copy of a stored turn as new, unstored events: new ids and call ids."""
    invocation = new_id()
    clones = []
    for event in template:
        wire = event.to_wire()
        wire.update(id=new_id(), invocation_id=invocation, seq=None, created_at=utc_now())
        for part in wire["parts"]:
            if "call_id" in part:
                part["call_id"] = f"fill_{number}"
        clones.append(Event.model_validate(wire))
    return clones


async def sample_turn() -> list[Event]:
    """The stored events of one real turn, run in memory: a template for ``clone_turn``."""
    sessions = InMemorySessionService()
    await run_turn(make_runner(sessions), "sample")
    session = await sessions.get_session(app_name="agents", user_id=USER, session_id="sample")
    assert session is not None
    return session.events
