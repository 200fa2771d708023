"""Replay: run a recorded turn again on its recorded model replies, tool results and
people's decisions, with no model called and no tool run, into a new session.

``Recording.of(events)`` indexes the turn (``agents_core.replay_record``);
``open_replay`` starts the new session with copies of the turns before it and of its
user message; ``ReplayRunner`` runs an agent tree (the recorded version or another
one) with its models, tools and approvals standing in for the record:

- a model call gets the agent's next recorded reply (agents by name, replies in
  order), marked ``replayed`` and without usage (no model spent anything, so no limit,
  budget or price counts it), when its request matches the record: the agent's
  request setup (instruction, tools, output schema, planner and model) is the recorded
  version's (``reference``), the tools the reply calls are offered, and the tool
  results the model reads are the recorded ones. The record holds no request, so this
  is what it can be checked on;
- a tool call gets its recorded result (by call id, for the same tool and arguments),
  its effects (state, transfer, escalation, artifacts) included, without running;
- an approval or a question gets the recorded decision or answer at once.

The first call that does not match makes the replay diverge: a non-fatal ``error``
event (code ``replay_diverged``, text "replay diverged here: <why>") is stored at that
point, and from there on every model, tool and person is the real one (the run is
live). ``comparable`` reduces events to what a faithful replay reproduces, and
``by_branch`` orders them so that concurrent branches' interleaving does not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agents_core._channel import Channel
from agents_core._replay_doubles import RecordedApprovals, RecordedModel, RecordedTool
from agents_core.agents.base import BaseAgent
from agents_core.agents.llm import LlmAgent
from agents_core.approvals import ApprovalBroker
from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType, TextPart, new_id
from agents_core.llm.chain import ModelChain, ModelLink
from agents_core.llm.contracts import BaseLlm
from agents_core.replay_record import Recording, ReplayError, digest
from agents_core.runner import Runner
from agents_core.sessions.base import BaseSessionService
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.ask_user import AskUserTool
from agents_core.tools.base import BaseTool

__all__ = [
    "DIVERGED",
    "Recording",
    "Replay",
    "ReplayError",
    "ReplayRunner",
    "by_branch",
    "comparable",
    "is_divergence",
    "open_replay",
    "replay_copies",
]

DIVERGED = "replay_diverged"
"""The error code of the event that marks where a replay went live."""
_VOLATILE = frozenset(
    {
        "id",
        "seq",
        "invocation_id",
        "session_id",
        "created_at",
        "started_at",
        "latency_ms",
        "span_id",
        "parent_span_id",
        "cost",
        "usage",
        "replayed",
        "schema_version",
    }
)


class Replay:
    """One replay's record and whether it still follows it (``live`` once diverged)."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self.divergence: str | None = None
        """Why the replay went live, once it has."""
        self._channel: Channel | None = None
        self._turn: tuple[str, str] = ("", "")

    @property
    def live(self) -> bool:
        return self.divergence is not None

    def bind(self, invocation_id: str, session_id: str, channel: Channel) -> None:
        """Where the divergence marker goes: the turn being run."""
        self._turn, self._channel = (invocation_id, session_id), channel

    async def diverge(self, why: str, *, author: str, branch: str | None = None) -> None:
        """Go live from here on, storing the marker first (once)."""
        if self.divergence is not None:
            return
        self.divergence = why
        if self._channel is None:
            return
        invocation_id, session_id = self._turn
        text = f"replay diverged here: {why}"
        marker = Event(
            type=EventType.ERROR,
            invocation_id=invocation_id,
            session_id=session_id,
            author=author,
            branch=branch,
            parts=[TextPart(text=text)],
            error=ErrorInfo(code=DIVERGED, message=text, failure="non_fatal"),
        )
        await self._channel.send(marker)


class ReplayRunner(Runner):
    """A ``Runner`` whose agent tree plays back ``replay``'s record until it diverges.

    ``reference`` is the agent tree that made the record, when ``agent`` is another
    version of it: an agent whose request setup differs from its namesake's there goes
    live at its first model call. Without it, ``agent`` is taken to be the recorded
    version. ``approvals`` is where people's decisions arrive once the replay is live.
    The tree's models and tools are replaced in place: build a tree for each replay.
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        replay: Replay,
        reference: BaseAgent | None = None,
        approvals: ApprovalBroker | None = None,
        **options: Any,
    ) -> None:
        setups = None if reference is None else _setups(reference)
        for each in _agents(agent):
            if isinstance(each, LlmAgent):
                _stand_in(each, replay, setups)
        live = approvals or ApprovalBroker()
        super().__init__(agent, approvals=RecordedApprovals(replay, live), **options)
        self.replay = replay

    async def _produce(self, ctx: Context, channel: Channel) -> None:
        self.replay.bind(ctx.invocation_id, ctx.session_id, channel)
        await super()._produce(ctx, channel)


async def open_replay(
    sessions: BaseSessionService,
    recording: Recording,
    *,
    app_name: str,
    user_id: str,
    session_id: str,
) -> Event:
    """Create the replay's session with copies of the events before the recorded turn
    (new ids, state rebuilt by appending them) and its user message; returns the stored
    message, which starts the turn (``Runner.astream(message=...)``)."""
    session = await sessions.create_session(
        app_name=app_name, user_id=user_id, session_id=session_id
    )
    for copy in replay_copies(recording, session.id):
        stored = await sessions.append_event(session, copy)
    return stored


def replay_copies(recording: Recording, session_id: str) -> list[Event]:
    """What a replay's session starts with: copies of the events before the recorded
    turn and of its user message (last), for session ``session_id``, with new ids
    (invocation ids too, one new id for each) and no seq, in order."""
    invocations: dict[str, str] = {}
    return [
        event.model_copy(
            update={
                "id": new_id(),
                "seq": None,
                "session_id": session_id,
                "invocation_id": invocations.setdefault(event.invocation_id, new_id()),
            }
        )
        for event in [*recording.before, recording.user_event]
    ]


def comparable(events: Iterable[Event]) -> list[dict[str, Any]]:
    """``events`` without what differs between two faithful runs of one turn: ids,
    seqs, times, latencies, spans, usage and prices (a replay spends nothing), and the
    mark of an answer played back. Partial events are left out, and so are parking on a
    person (``run_parked``, and an agent starting again in its span after it) and a
    model call's retries (``model_retry``: a replay calls no model), which are how a run
    waited, not what it did."""
    out = []
    started: set[str] = set()
    for event in events:
        if event.partial or event.type in (EventType.RUN_PARKED, EventType.MODEL_RETRY):
            continue
        if event.type is EventType.AGENT_START and event.span_id:
            if event.span_id in started:
                continue
            started.add(event.span_id)
        data = event.model_dump(mode="json", exclude=set(_VOLATILE))
        for part in data["parts"]:
            part.pop("span_id", None)
        out.append(data)
    return out


def by_branch(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``comparable`` rows grouped by branch, each branch's rows in their order. Concurrent
    branches (parallel agents, tools that run in threads) may interleave differently
    from run to run; what each branch did, in order, may not."""
    return sorted(rows, key=lambda row: row["branch"] or "")


def is_divergence(event: Event) -> bool:
    """Whether ``event`` marks where a replay went live."""
    return event.error is not None and event.error.code == DIVERGED


def _agents(root: BaseAgent) -> list[BaseAgent]:
    """Every agent of ``root``'s tree: sub-agents and the agents its agent tools run."""
    found: list[BaseAgent] = []
    todo = [root]
    while todo:
        agent = todo.pop()
        if any(agent is seen for seen in found):
            continue
        found.append(agent)
        todo.extend(agent.sub_agents)
        if isinstance(agent, LlmAgent):
            todo.extend(t.agent for t in agent.tools.values() if isinstance(t, AgentTool))
    return found


def _stand_in(agent: LlmAgent, replay: Replay, setups: dict[str, dict[str, Any]] | None) -> None:
    why = None if setups is None else _setup_change(agent, setups.get(agent.name))
    agent.model = _recorded(agent.name, agent.model, replay, why)
    agent.tools = {name: _tool(tool, replay) for name, tool in agent.tools.items()}


def _recorded(author: str, model: BaseLlm, replay: Replay, why: str | None) -> BaseLlm:
    if isinstance(model, ModelChain):  # each link in place, so events still name it
        links = [
            ModelLink(link.name, _recorded(author, link.model, replay, why)) for link in model.links
        ]
        return ModelChain(links, cache_ttl_s=model.cache_ttl_s)
    return RecordedModel(author, model, replay, setup=why)


def _tool(tool: BaseTool, replay: Replay) -> BaseTool:
    """Tools that run agents or ask people stay: their agents and people are replayed."""
    if isinstance(tool, AgentTool | AskUserTool | RecordedTool):
        return tool
    return RecordedTool(tool, replay)


def _setups(root: BaseAgent) -> dict[str, dict[str, Any]]:
    return {a.name: _setup(a) for a in _agents(root) if isinstance(a, LlmAgent)}


def _setup(agent: LlmAgent) -> dict[str, Any]:
    """What shapes an agent's model requests besides its conversation."""
    instruction = agent.instruction
    schema = agent.output_schema
    return {
        "instruction": instruction if isinstance(instruction, str) else repr(instruction),
        "output schema": None if schema is None else schema.instruction(),
        "tools": digest([t.schema().model_dump(mode="json") for t in agent.tools.values()]),
        "transfer targets": sorted(a.name for a in agent.transfer_targets()),
        "planner": None if agent.planner is None else type(agent.planner).__qualname__,
        "model": _model_key(agent.model),
    }


def _model_key(model: BaseLlm) -> str:
    if isinstance(model, RecordedModel):
        return _model_key(model.live)
    if isinstance(model, ModelChain):
        return ",".join(f"{link.name}={_model_key(link.model)}" for link in model.links)
    return model.provider_key


def _setup_change(agent: LlmAgent, recorded: dict[str, Any] | None) -> str | None:
    if recorded is None:
        return f"{agent.name!r} is not in the recorded version"
    now = _setup(agent)
    changed: Sequence[str] = [key for key in now if now[key] != recorded.get(key)]
    if not changed:
        return None
    return f"{agent.name!r} has another {' and '.join(changed)} than the recorded version"
