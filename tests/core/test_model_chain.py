"""Fallback chains, the response cache and the shared rate limit around model calls,
through specs, the builder and whole runs of ``Runner``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from agents_core import BaseAgent, InMemorySessionService, RetryPolicy, RunConfig
from agents_core.builder import build_agent, check_spec
from agents_core.events import Event, EventType, TextPart
from agents_core.exceptions import ModelRateLimitError, ModelRequestError, ModelServerError
from agents_core.llm import ChatMessage, LlmRequest, LlmResponse, ScriptedModel
from agents_core.llm.chain import ModelChain, ModelLink, request_key
from agents_core.llm.resilience import BreakerRegistry
from agents_core.spans import spans_of
from agents_core.specs import AgentSpec
from agents_core.testing import reply
from agents_core.tools.registry import default_registry
from tests.core.run_helpers import complete, make_runner, run_turn, stored_events

NO_WAIT = RunConfig(retry=RetryPolicy(max_attempts=2, initial_backoff_s=0, max_backoff_s=0))


def agent_of(spec: Mapping[str, object], **models: ScriptedModel) -> BaseAgent:
    return build_agent(
        AgentSpec.model_validate(dict(spec)), models=models, tools=default_registry()
    )


async def run(agent: BaseAgent, **options: Any) -> tuple[list[Event], InMemorySessionService]:
    sessions = InMemorySessionService()
    runner = make_runner(agent, sessions, BreakerRegistry(), run_config=NO_WAIT, **options)
    await run_turn(runner)
    return await stored_events(sessions), sessions


async def test_a_retryable_failure_moves_the_call_to_the_fallback_model() -> None:
    down = ScriptedModel([ModelServerError("503 from upstream")], name="a", loop=True)
    backup = ScriptedModel([reply("from b")], name="b")
    agent = agent_of({"name": "bot", "model": "a", "fallback_models": ["b"]}, a=down, b=backup)

    events, _ = await run(agent)

    switch = next(e for e in events if e.type is EventType.MODEL_FALLBACK)
    assert switch.fallback is not None
    assert (switch.fallback.from_model, switch.fallback.to_model) == ("a", "b")
    assert switch.fallback.code == ModelServerError.code
    message = next(e for e in events if e.type is EventType.AGENT_MESSAGE)
    assert message.text == "from b" and message.model == "b"
    assert len(down.requests) == 2  # its retries were spent first
    [retry] = [e for e in events if e.type is EventType.MODEL_RETRY]
    assert retry.model == "a" and retry.seq is not None and retry.seq < switch.seq  # type: ignore[operator]


async def test_a_terminal_failure_does_not_fall_back() -> None:
    refused = ScriptedModel([ModelRequestError("400 bad request")], name="a", loop=True)
    backup = ScriptedModel([reply("from b")], name="b")
    agent = agent_of({"name": "bot", "model": "a", "fallback_models": ["b"]}, a=refused, b=backup)

    events, _ = await run(agent)

    assert not [e for e in events if e.type is EventType.MODEL_FALLBACK]
    assert events[-1].type is EventType.ERROR and backup.requests == []


async def test_an_agent_without_fallbacks_or_cache_names_no_model() -> None:
    agent = agent_of({"name": "bot", "model": "a"}, a=ScriptedModel([reply("hi")], name="a"))

    events, _ = await run(agent)

    message = next(e for e in events if e.type is EventType.AGENT_MESSAGE)
    assert message.model is None and message.cached is False


def test_check_spec_names_unknown_and_repeated_fallbacks() -> None:
    spec = AgentSpec.model_validate({"name": "bot", "model": "a", "fallback_models": ["zz", "a"]})
    errors = check_spec(spec, models={"a", "b"}, tools=default_registry())
    assert [e.path for e in errors] == [("fallback_models", 0), ("fallback_models", 1)]
    assert "unknown model 'zz'" in errors[0].message
    assert "already in this agent's chain" in errors[1].message


@dataclass(slots=True)
class DictCache:
    kept: dict[str, LlmResponse] = field(default_factory=dict)
    ttls: list[float] = field(default_factory=list)

    async def get(self, model: str, request: LlmRequest) -> LlmResponse | None:
        return self.kept.get(request_key(model, request))

    async def put(
        self, model: str, request: LlmRequest, response: LlmResponse, ttl_s: float
    ) -> None:
        self.kept[request_key(model, request)] = response
        self.ttls.append(ttl_s)


async def test_the_same_request_twice_is_answered_from_the_cache_the_second_time() -> None:
    model = ScriptedModel([reply("fresh")], name="a", loop=True)
    spec = {"name": "bot", "model": "a", "cache": {"ttl_s": 60}}
    cache = DictCache()

    first, _ = await run(agent_of(spec, a=model), response_cache=cache)
    second, _ = await run(agent_of(spec, a=model), response_cache=cache)

    answers = [
        next(e for e in events if e.type is EventType.AGENT_MESSAGE) for events in (first, second)
    ]
    assert [a.cached for a in answers] == [False, True]
    assert [a.text for a in answers] == ["fresh", "fresh"]
    assert answers[1].model == "a" and answers[1].usage is None
    assert len(model.requests) == 1 and cache.ttls == [60]


def test_request_keys_differ_with_the_model_and_the_messages() -> None:
    one = LlmRequest(messages=[ChatMessage(role="user", text="hi")])
    other = LlmRequest(messages=[ChatMessage(role="user", text="hello")])
    assert request_key("a", one) == request_key("a", LlmRequest.model_validate(one.model_dump()))
    assert len({request_key("a", one), request_key("b", one), request_key("a", other)}) == 3


@dataclass(slots=True)
class OneCallLimiter:
    """Admits ``allowed`` calls, then asks each caller to wait ``delay`` (and admits it
    after ``refusals`` refusals)."""

    max_wait_s: float
    delay: float
    refusals: int
    allowed: int = 1
    asked: list[int] = field(default_factory=list)

    async def try_acquire(self, model: str, tokens: int) -> float | None:
        self.asked.append(tokens)
        if self.allowed:
            self.allowed -= 1
            return None
        if self.refusals:
            self.refusals -= 1
            return self.delay
        return None


async def test_a_call_over_the_rate_limit_waits_and_the_wait_is_stored() -> None:
    limiter = OneCallLimiter(max_wait_s=1.0, delay=0.01, refusals=2, allowed=0)
    agent = agent_of({"name": "bot", "model": "a"}, a=ScriptedModel([reply("hi")], name="a"))

    events, _ = await run(agent, rate_limiter=limiter)

    types = [e.type for e in complete(events)]
    assert types.index(EventType.RATE_LIMIT_WAITING) < types.index(EventType.RATE_LIMIT_WAIT)
    assert types.index(EventType.RATE_LIMIT_WAIT) < types.index(EventType.AGENT_MESSAGE)
    [opened] = [e for e in events if e.type is EventType.RATE_LIMIT_WAITING]
    [wait] = [e for e in events if e.type is EventType.RATE_LIMIT_WAIT]
    assert wait.span_id is not None and wait.span_id == opened.span_id
    assert wait.started_at == opened.created_at and wait.error is None
    [span] = [s for s in spans_of(e.to_wire() for e in complete(events)) if s.kind == "wait"]
    assert (span.name, span.status, span.start_seq, span.end_seq) == (
        "rate_limit",
        "ok",
        opened.seq,
        wait.seq,
    )
    assert len(limiter.asked) == 3


async def test_a_wait_that_gives_up_is_closed_as_an_error_before_the_run_fails() -> None:
    limiter = OneCallLimiter(max_wait_s=0.05, delay=0.03, refusals=5, allowed=0)
    agent = agent_of({"name": "bot", "model": "a"}, a=ScriptedModel([reply("hi")], name="a"))

    events, _ = await run(agent, rate_limiter=limiter)

    types = [e.type for e in complete(events)]
    assert types.index(EventType.RATE_LIMIT_WAIT) < types.index(EventType.ERROR)
    assert events[-1].error is not None and events[-1].error.code == ModelRateLimitError.code
    [wait] = [e for e in events if e.type is EventType.RATE_LIMIT_WAIT]
    assert wait.error is not None and wait.error.code == ModelRateLimitError.code
    assert not wait.error.terminal
    [span] = [s for s in spans_of(e.to_wire() for e in complete(events)) if s.kind == "wait"]
    assert span.status == "error"


def test_a_wait_stored_before_the_opening_event_is_still_a_closed_span() -> None:
    wait = Event(
        type=EventType.RATE_LIMIT_WAIT,
        invocation_id="inv",
        session_id="s",
        author="bot",
        seq=3,
        parts=[TextPart(text="waited 1.0s for the rate limit of a")],
        span_id="w1",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        created_at=datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC),
    )
    [span] = spans_of([wait.to_wire()])
    assert (span.kind, span.status, span.duration_ms) == ("wait", "ok", 1000.0)


async def test_a_call_that_would_wait_past_the_bound_fails_as_rate_limited() -> None:
    limiter = OneCallLimiter(max_wait_s=0.5, delay=60.0, refusals=1, allowed=0)
    model = ScriptedModel([reply("hi")], name="a")
    agent = agent_of({"name": "bot", "model": "a"}, a=model)

    events, _ = await run(agent, rate_limiter=limiter)

    assert events[-1].type is EventType.ERROR and events[-1].error is not None
    assert events[-1].error.code == ModelRateLimitError.code
    assert model.requests == []


async def test_a_rate_limited_model_falls_back_to_the_next() -> None:
    limiter = OneCallLimiter(max_wait_s=0.5, delay=60.0, refusals=1, allowed=0)
    agent = agent_of(
        {"name": "bot", "model": "a", "fallback_models": ["b"]},
        a=ScriptedModel([reply("a")], name="a"),
        b=ScriptedModel([reply("b")], name="b"),
    )

    events, _ = await run(agent, rate_limiter=limiter)

    message = next(e for e in events if e.type is EventType.AGENT_MESSAGE)
    assert message.text == "b" and message.model == "b"


def test_workflow_agents_take_no_fallbacks() -> None:
    spec = AgentSpec.model_validate(
        {
            "type": "sequential",
            "name": "seq",
            "fallback_models": ["a"],
            "sub_agents": [{"name": "x", "model": "a"}],
        }
    )
    errors = check_spec(spec, models={"a"}, tools=default_registry())
    assert ("fallback_models",) in [e.path for e in errors]


@pytest.mark.parametrize("ttl", [0, 31 * 24 * 3600])
def test_cache_ttl_is_bounded(ttl: int) -> None:
    with pytest.raises(ValueError, match="ttl_s"):
        AgentSpec.model_validate({"name": "bot", "model": "a", "cache": {"ttl_s": ttl}})


async def test_a_chain_on_its_own_walks_to_the_next_model_without_a_run() -> None:
    down = ScriptedModel([ModelServerError("503")], name="a")
    backup = ScriptedModel([reply("from b")], name="b")
    chain = ModelChain([ModelLink("a", down), ModelLink("b", backup)])

    answers = [r async for r in chain.astream(LlmRequest()) if not r.partial]

    assert [a.text for a in answers] == ["from b"]
    assert chain.provider_key == down.provider_key


def test_a_chain_reserves_the_longest_answer_any_of_its_models_may_give() -> None:
    short = ScriptedModel([], name="a", max_answer_tokens=10)
    long = ScriptedModel([], name="b", max_answer_tokens=500)
    assert ModelChain([ModelLink("a", short), ModelLink("b", long)]).max_output_tokens == 500
    unknown = ScriptedModel([], name="c")
    assert ModelChain([ModelLink("a", short), ModelLink("c", unknown)]).max_output_tokens is None
