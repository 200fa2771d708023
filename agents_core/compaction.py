"""Session compaction: old events summarised into one compaction event.

Runs only at the end of a turn, never mid-stream. Each compaction covers the session
from its first event up to a cut, so the newest summary subsumes the older ones; the
last ``keep_last`` conversation events always stay raw. The cut never separates a tool
call from its response, and compaction is skipped while any call is unanswered.

The summary is a model call like any other: it waits for its model's shared rate
limit, and it is read from and kept in the response cache when the agent has one
(``agents_core.model_gates``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from agents_core.after_turn import AfterTurnCall
from agents_core.event_filters import apply_compaction, should_include_event
from agents_core.events import (
    CompactionRange,
    Event,
    EventActions,
    EventType,
    TextPart,
)
from agents_core.exceptions import AgentsCoreError, ConfigurationError
from agents_core.llm.contracts import (
    BaseLlm,
    ChatMessage,
    LlmRequest,
    LlmResponse,
    estimate_prompt_tokens,
)
from agents_core.model_gates import ModelGates, admitted
from agents_core.span_contract import SUMMARY_FAILED

logger = logging.getLogger("agents_core.compaction")

SUMMARY_INSTRUCTION = (
    "Summarise the conversation below for the assistant that will continue it. Keep "
    "facts, decisions, names, numbers, open questions and tool results that still matter. "
    "Write plain prose, at most a few paragraphs."
)


@dataclass(frozen=True, slots=True)
class CompactionConfig:
    """When to compact and with which model.

    ``threshold``: compact once more than this many raw conversation events are visible;
    ``keep_last``: how many of the newest ones stay raw. ``model_name`` names the
    summariser as the rate limiter and cache know it (``None``: neither gates it);
    ``cache_ttl_s`` keeps summaries in the response cache that long (``None``: not).
    """

    summarizer: BaseLlm
    threshold: int = 50
    keep_last: int = 10
    instruction: str = SUMMARY_INSTRUCTION
    model_name: str | None = None
    cache_ttl_s: float | None = None

    def __post_init__(self) -> None:
        if self.keep_last < 1 or self.threshold <= self.keep_last:
            raise ConfigurationError("compaction needs 1 <= keep_last < threshold")


def plan_cut(events: Sequence[Event], config: CompactionConfig) -> int | None:
    """The last seq to summarise, or ``None`` when nothing should be compacted."""
    visible = [e for e in apply_compaction(events) if should_include_event(e)]
    raw = [e for e in visible if e.type is not EventType.COMPACTION]
    if len(raw) <= config.threshold:
        return None
    answered = {r.call_id for e in raw for r in e.tool_results}
    if any(c.id not in answered for e in raw for c in e.tool_calls):
        return None  # an open call: its response would land after the summary
    candidates = raw[: len(raw) - config.keep_last]
    while candidates:
        calls = {c.id for e in candidates for c in e.tool_calls}
        results = {r.call_id for e in candidates for r in e.tool_results}
        if calls <= results:
            return candidates[-1].seq
        candidates.pop()  # back off until no call in the range lacks its response
    return None


async def compact(
    events: Sequence[Event],
    config: CompactionConfig,
    *,
    invocation_id: str,
    author: str,
    gates: ModelGates | None = None,
    call: AfterTurnCall | None = None,
) -> Event | None:
    """A compaction event for ``events`` (a session's stored events), or ``None``.

    The summary is a model call that costs money: the event carries the summariser's
    ``usage`` (``None`` when it reported none, or when the summary came from the
    cache), so a session store can price it. It goes through ``gates`` (rate limit,
    cache). A failing summariser (or a rate limit with no room in time) leaves the
    session as it was: the event is then a non-fatal ``summary_failed`` error on the
    call's span, saying why, so the record shows the call and why nothing was
    summarised. ``call``: the call's span, when the caller opened it (it may show it).
    """
    cut = plan_cut(events, config)
    if cut is None:
        return None
    covered = [e for e in apply_compaction(events) if e.seq is not None and e.seq <= cut]
    request = LlmRequest(
        system_instruction=config.instruction,
        messages=[ChatMessage(role="user", text=transcript(covered))],
        purpose="summary",
    )
    call = call or AfterTurnCall.start(events, invocation_id)
    try:
        summary, cached = await _gated_summary(config, request, gates)
    except AgentsCoreError as exc:
        logger.warning("compaction skipped: the summariser failed", exc_info=True)
        said = f"the session was not summarised: {exc.code}: {exc.message}"
        return call.failure(code=SUMMARY_FAILED, said=said, author=author, model=config.model_name)
    return Event(
        type=EventType.COMPACTION,
        author=author,
        parts=[TextPart(text=summary.text.strip())],
        usage=summary.usage,
        cached=cached,
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=cut)),
        **call.fields(),
    )


TRANSCRIPT_CHARS = 2_000
"""How much of each message, tool result or summary the summariser reads."""


def transcript(events: Sequence[Event]) -> str:
    """A plain-text rendering of conversation events, for the summariser; each entry
    cut to ``TRANSCRIPT_CHARS``, so a few huge messages cannot overflow its context."""
    lines: list[str] = []
    for event in events:
        if not should_include_event(event):
            continue
        if event.type is EventType.COMPACTION:
            lines.append(f"(summary of what came before) {_cut(event.text)}")
        elif event.type is EventType.USER_MESSAGE:
            lines.append(f"user: {_cut(event.text)}")
        elif event.type is EventType.TOOL_RESPONSE:
            lines.extend(f"tool {r.name} returned: {_cut(r.output)}" for r in event.tool_results)
        else:
            calls = ", ".join(f"{c.name}({c.args})" for c in event.tool_calls)
            text = _cut(event.text) + (f" [called {_cut(calls)}]" if calls else "")
            lines.append(f"{event.author}: {text}")
    return "\n".join(lines)


def _cut(text: str) -> str:
    return text if len(text) <= TRANSCRIPT_CHARS else f"{text[:TRANSCRIPT_CHARS]} […]"


async def _gated_summary(
    config: CompactionConfig, request: LlmRequest, gates: ModelGates | None
) -> tuple[LlmResponse, bool]:
    """The summary from the cache (``True``: no model was called), or from the
    summariser once its rate limit admits it (then kept in the cache)."""
    name = config.model_name
    if gates is None or name is None:
        return await _summarise(config.summarizer, request), False
    cache = gates.response_cache if config.cache_ttl_s else None
    if cache is not None and (kept := await cache.get(name, request)) is not None:
        return kept.model_copy(update={"usage": None}), True  # nothing was spent
    if gates.rate_limiter is not None:
        output = config.summarizer.max_output_tokens or 0
        await admitted(gates.rate_limiter, name, estimate_prompt_tokens(request) + output)
    summary = await _summarise(config.summarizer, request)
    if cache is not None and config.cache_ttl_s:
        await cache.put(name, request, summary, config.cache_ttl_s)
    return summary, False


async def _summarise(model: BaseLlm, request: LlmRequest) -> LlmResponse:
    final = None
    async for chunk in model.astream(request):
        if not chunk.partial:
            final = chunk
    if final is None or not final.text.strip():
        raise AgentsCoreError("the summariser returned no text")
    return final
