"""Long-term memory: short texts a user's agent keeps across sessions.

A ``MemoryService`` stores memories per user and agent (``add``, ``search``,
``forget``); ``InMemoryMemoryService`` is the one for tests and scripts (Studio keeps
them in its database, searched with the database's full-text search). A runner given a
service (``Runner(memory=MemoryConfig(...))``) hands it to the run, where:

- the memory tools (``memory_tools()``: ``remember``, ``recall``, ``forget_memory``)
  let the agent write, search and drop its user's memories; an ``AgentSpec`` turns them
  on with ``memory: {"tools": true}``;
- with ``key_facts`` set (``memory: {"save_at_end": true}`` on the root agent), each
  turn that ends normally asks a model for the conversation's key facts, a short JSON
  list, stores each as a memory of the root agent, and records them and the call's
  usage as a ``memory_saved`` event (so its cost counts like any model call's).

Memories are plain text, at most ``MAX_MEMORY_CHARS`` each; a search returns at most
``MAX_RESULTS``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from agents_core.after_turn import AfterTurnCall
from agents_core.compaction import transcript
from agents_core.events import Event, EventType, TextPart, new_id, utc_now
from agents_core.exceptions import AgentsCoreError, ToolExecutionError
from agents_core.llm.contracts import BaseLlm, ChatMessage, LlmRequest
from agents_core.span_contract import KEY_FACTS_FAILED
from agents_core.tools.base import BaseTool, ToolContext
from agents_core.tools.function import FunctionTool

__all__ = [
    "MAX_MEMORY_CHARS",
    "InMemoryMemoryService",
    "KeyFacts",
    "Memory",
    "MemoryConfig",
    "MemoryService",
    "checked_text",
    "memory_tools",
    "save_key_facts",
]

logger = logging.getLogger("agents_core.memory")

MAX_MEMORY_CHARS = 2_000
MAX_RESULTS = 20
MAX_KEY_FACTS = 5
TRANSCRIPT_EVENTS = 40
"""How many of a session's newest events the key-facts model reads."""


@dataclass(frozen=True, slots=True)
class Memory:
    """One remembered text, written by ``agent`` for ``user_id`` in ``session_id``."""

    id: str
    user_id: str
    agent: str
    text: str
    session_id: str | None = None
    created_at: datetime = field(default_factory=utc_now)


class MemoryService(Protocol):
    """Where memories live. Every call is scoped to one user: another user's memories
    are never found, and forgetting one answers ``False``."""

    async def add(self, user_id: str, agent: str, text: str, session_id: str | None) -> Memory: ...

    async def search(self, user_id: str, agent: str, query: str, limit: int) -> list[Memory]:
        """``agent``'s memories of ``user_id`` that match ``query``, best first."""
        ...

    async def forget(self, user_id: str, memory_id: str) -> bool:
        """Drop one memory; ``False`` when ``user_id`` has none with that id."""
        ...


class MemoryStoreError(ToolExecutionError):
    """A memory the service refuses (empty, too long) or cannot reach."""

    code = "memory_error"


def checked_text(text: str) -> str:
    """``text`` stripped; ``MemoryStoreError`` when it is empty or longer than allowed."""
    text = text.strip()
    if not text:
        raise MemoryStoreError("a memory needs some text")
    if len(text) > MAX_MEMORY_CHARS:
        raise MemoryStoreError(f"a memory may be at most {MAX_MEMORY_CHARS} characters")
    return text


_WORD = re.compile(r"\w+")


def terms(text: str) -> set[str]:
    """The lower-cased words of ``text``."""
    return {word.lower() for word in _WORD.findall(text)}


class InMemoryMemoryService:
    """Memories in a list, ranked by how many of the query's words they share."""

    def __init__(self) -> None:
        self.memories: list[Memory] = []

    async def add(self, user_id: str, agent: str, text: str, session_id: str | None) -> Memory:
        memory = Memory(new_id(), user_id, agent, checked_text(text), session_id)
        self.memories.append(memory)
        return memory

    async def search(self, user_id: str, agent: str, query: str, limit: int) -> list[Memory]:
        wanted = terms(query)
        scored = [
            (len(wanted & terms(m.text)), index, m)
            for index, m in enumerate(self.memories)
            if m.user_id == user_id and m.agent == agent
        ]
        hits = [(score, index, m) for score, index, m in scored if score or not wanted]
        hits.sort(key=lambda hit: (-hit[0], -hit[1]))  # most shared words, newest first
        return [m for _, _, m in hits[: max(0, min(limit, MAX_RESULTS))]]

    async def forget(self, user_id: str, memory_id: str) -> bool:
        kept = [m for m in self.memories if not (m.id == memory_id and m.user_id == user_id)]
        dropped = len(kept) != len(self.memories)
        self.memories = kept
        return dropped


@dataclass(frozen=True, slots=True)
class KeyFacts:
    """Which model writes a turn's key facts, and whose memories they become."""

    model: BaseLlm
    agent: str


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """A run's memory: its service, and whether turns end by saving their key facts."""

    service: MemoryService
    key_facts: KeyFacts | None = None


# The tools


def _service(tool_context: ToolContext) -> MemoryService:
    config = tool_context.context.invocation.memory
    if config is None:
        raise MemoryStoreError("this run has no memory service: memory is not available here")
    return config.service


async def remember(text: str, tool_context: ToolContext) -> str:
    """Remember a fact about the user for later sessions.

    Args:
        text: The fact, in one short sentence.
    """
    ctx = tool_context.context
    memory = await _service(tool_context).add(
        ctx.session.user_id, ctx.agent_name, text, ctx.session_id
    )
    return f"Remembered (id {memory.id}): {memory.text}"


async def recall(query: str, tool_context: ToolContext, limit: int = 5) -> str:
    """Search what you remembered about the user in earlier sessions.

    Args:
        query: Words to look for.
        limit: How many memories to return, at most.
    """
    ctx = tool_context.context
    found = await _service(tool_context).search(
        ctx.session.user_id, ctx.agent_name, query, max(1, min(limit, MAX_RESULTS))
    )
    if not found:
        return "No memories match."
    return "\n".join(f"- {m.text} (id {m.id})" for m in found)


async def forget_memory(memory_id: str, tool_context: ToolContext) -> str:
    """Forget one memory, by the id recall showed.

    Args:
        memory_id: The memory's id.
    """
    user_id = tool_context.context.session.user_id
    if not await _service(tool_context).forget(user_id, memory_id):
        raise MemoryStoreError(f"no memory with id {memory_id!r}")
    return f"Forgot memory {memory_id}."


def memory_tools() -> list[BaseTool]:
    """``remember``, ``recall`` and ``forget_memory``, reading the run's memory service
    (``Invocation.memory``); ``recall`` changes nothing, so it is not journalled."""
    return [
        FunctionTool(remember),
        FunctionTool(recall, side_effects=False),
        FunctionTool(forget_memory),
    ]


# Key facts at the end of a turn

KEY_FACTS_INSTRUCTION = (
    "Read the conversation below and list the facts about the user worth remembering in "
    f"later conversations (preferences, names, decisions): at most {MAX_KEY_FACTS}, each "
    'one short sentence. Answer with a JSON array of strings only, e.g. ["Prefers tea."]; '
    "answer [] when there is nothing worth keeping."
)


async def save_key_facts(
    events: Sequence[Event],
    config: MemoryConfig,
    *,
    user_id: str,
    session_id: str,
    invocation_id: str,
    call: AfterTurnCall | None = None,
) -> Event | None:
    """Ask ``config.key_facts.model`` for the key facts of ``events``, store each, and
    return the ``memory_saved`` event that records them and what the call cost (on
    ``call``'s span, when the caller opened it: it may show it).

    Bounded: the model reads the newest ``TRANSCRIPT_EVENTS`` events, and at most
    ``MAX_KEY_FACTS`` facts are kept, each cut to ``MAX_MEMORY_CHARS``. A failing model
    (whatever it raises) saves nothing and does not fail the turn, which has already
    ended well: the event is then a non-fatal ``key_facts_failed`` error on the call's
    span, saying why (``AfterTurnCall.failure``). A memory store that fails part-way is logged
    too; the event then names the facts stored before it failed. A fact the agent
    already remembers of the user (the same words, case and spacing aside) is not
    stored again: the model reads earlier turns too, and names their facts again.
    """
    wanted = config.key_facts
    if wanted is None:
        return None
    request = LlmRequest(
        system_instruction=KEY_FACTS_INSTRUCTION,
        messages=[ChatMessage(role="user", text=transcript(events[-TRANSCRIPT_EVENTS:]))],
        purpose="summary",
    )
    answer = None
    call = call or AfterTurnCall.start(events, invocation_id)
    try:
        async for chunk in wanted.model.astream(request):
            if not chunk.partial:
                answer = chunk
    except Exception as exc:  # any provider's failure: the turn stands without its key facts
        logger.warning("key facts not saved: the model failed", exc_info=True)
        why = f"{exc.code}: {exc.message}" if isinstance(exc, AgentsCoreError) else repr(exc)
        said = f"no key facts were saved: {why}"
        return call.failure(code=KEY_FACTS_FAILED, said=said, author=wanted.agent)
    saved: list[str] = []
    try:
        for fact in parse_facts(answer.text if answer else ""):
            if not await _remembered(config.service, user_id, wanted.agent, fact):
                await config.service.add(user_id, wanted.agent, fact, session_id)
                saved.append(fact)
    except Exception:  # a memory store's own errors are not the SDK's
        logger.warning("key facts not all saved: the memory store failed", exc_info=True)
    return Event(
        type=EventType.MEMORY_SAVED,
        author=wanted.agent,
        parts=[TextPart(text=fact) for fact in saved],
        usage=answer.usage if answer else None,
        **call.fields(),
    )


async def _remembered(service: MemoryService, user_id: str, agent: str, fact: str) -> bool:
    """Whether ``agent`` remembers ``fact`` of ``user_id`` already, in the same words."""
    same = _words(fact)
    found = await service.search(user_id, agent, fact, MAX_KEY_FACTS)
    return any(_words(memory.text) == same for memory in found)


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


def parse_facts(answer: str) -> list[str]:
    """The facts in a model's answer: a JSON array of strings, or else one per line
    (bullets dropped); at most ``MAX_KEY_FACTS``, each cut to ``MAX_MEMORY_CHARS``."""
    text = answer.strip()
    start, end = text.find("["), text.rfind("]")
    items: list[object]
    try:
        parsed = json.loads(text[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        parsed = None
    if isinstance(parsed, list):
        items = parsed
    else:
        items = [line.strip().lstrip("-*•").strip() for line in text.splitlines()]
    facts = [item.strip()[:MAX_MEMORY_CHARS] for item in items if isinstance(item, str)]
    return [fact for fact in facts if fact][:MAX_KEY_FACTS]
