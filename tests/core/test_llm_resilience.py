"""Retries, backoff and circuit breakers around model calls: unit tests with a fake
clock, and whole runs through ``Runner`` and the real OpenAI client over HTTP."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents_core import (
    BreakerPolicy,
    CancellationToken,
    InMemorySessionService,
    LlmAgent,
    RetryPolicy,
    RunConfig,
    Runner,
)
from agents_core._step_loop import CUT_OFF
from agents_core.events import ErrorInfo, Event, EventType
from agents_core.exceptions import (
    CircuitOpenError,
    LimitExceededError,
    ModelRequestError,
    ModelServerError,
)
from agents_core.ledger import CallLedger
from agents_core.llm import ChatMessage, LlmRequest
from agents_core.llm.langchain import LangChainModel
from agents_core.llm.openai import openai_compatible
from agents_core.llm.resilience import (
    BreakerRegistry,
    BreakerState,
    CircuitBreaker,
    ResilientCall,
)
from agents_core.spans import spans_of
from tests.support.openai_server import OpenAIServer, unreachable_base_url

MODEL = "test-model"
NO_WAIT = RetryPolicy(max_attempts=3, initial_backoff_s=0, max_backoff_s=0)


@dataclass(slots=True)
class FakeClock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass(slots=True)
class Turns:
    """Runs user turns against the test server, each with a fresh agent and session
    service but the same breaker registry, as separate runs of one deployment would."""

    server: OpenAIServer
    http_clients: dict[str, Any]
    breakers: BreakerRegistry

    def model(self, *, timeout_s: float = 10.0) -> LangChainModel:
        return openai_compatible(
            model=MODEL,
            base_url=self.server.base_url,
            api_key="sk-test",
            timeout_s=timeout_s,
            **self.http_clients,
        )

    async def run(self, config: RunConfig, *, cancel_at_first_token: bool = False) -> list[Event]:
        agent = LlmAgent("assistant", model=self.model())
        runner = Runner(
            agent,
            session_service=InMemorySessionService(),
            run_config=config,
            breakers=self.breakers,
        )
        token = CancellationToken()
        events: list[Event] = []
        async for event in runner.astream(
            user_id="u", session_id="s", message="hi", cancel_token=token
        ):
            events.append(event)
            if cancel_at_first_token and event.partial:
                token.cancel()
        return events


@pytest.fixture
def turns(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any], breakers: BreakerRegistry
) -> Turns:
    return Turns(openai_server, loopback_http_clients, breakers)


def stored(events: list[Event]) -> list[Event]:
    return [e for e in events if not e.partial]


def run_error(events: list[Event]) -> ErrorInfo:
    """The error of the run's one error event, which must be terminal and come last."""
    errors = [e for e in events if e.type is EventType.ERROR]
    assert len(errors) == 1, errors
    assert events[-1] is errors[0]
    assert errors[0].is_terminal_error
    assert errors[0].error is not None
    return errors[0].error


def final_text(events: list[Event]) -> str:
    [answer] = [e for e in events if e.is_final_response()]
    return answer.text


# -- backoff -----------------------------------------------------------------------------


def test_backoff_grows_exponentially_until_the_cap() -> None:
    policy = RetryPolicy(initial_backoff_s=0.5, multiplier=2, max_backoff_s=3, jitter=False)

    assert [policy.backoff(attempt, 0.0) for attempt in range(1, 6)] == [0.5, 1, 2, 3, 3]


def test_jitter_draws_the_wait_from_below_the_ceiling() -> None:
    policy = RetryPolicy(initial_backoff_s=1, multiplier=2, max_backoff_s=60)

    assert policy.backoff(3, 0.0) == 0
    assert policy.backoff(3, 0.25) == 1
    assert policy.backoff(3, 0.5) == 2


@given(
    attempt=st.integers(min_value=1, max_value=40),
    rand=st.floats(min_value=0, max_value=1, exclude_max=True),
    initial=st.floats(min_value=0, max_value=10),
    cap=st.floats(min_value=10, max_value=100),
    multiplier=st.floats(min_value=1, max_value=4),
)
def test_jittered_backoff_stays_within_zero_and_the_ceiling(
    attempt: int, rand: float, initial: float, cap: float, multiplier: float
) -> None:
    policy = RetryPolicy(initial_backoff_s=initial, max_backoff_s=cap, multiplier=multiplier)
    ceiling = min(cap, initial * multiplier ** (attempt - 1))

    assert 0 <= policy.backoff(attempt, rand) <= ceiling


# -- circuit breaker ---------------------------------------------------------------------


def breaker(clock: FakeClock, *, threshold: int = 3, cooldown_s: float = 30) -> CircuitBreaker:
    return CircuitBreaker(BreakerPolicy(failure_threshold=threshold, cooldown_s=cooldown_s), clock)


def open_breaker(clock: FakeClock) -> CircuitBreaker:
    opened = breaker(clock)
    for _ in range(3):
        opened.before_call("p")
        opened.record_failure()
    return opened


def test_breaker_stays_closed_below_the_failure_threshold() -> None:
    subject = breaker(FakeClock())

    subject.record_failure()
    subject.record_failure()

    assert subject.state is BreakerState.CLOSED
    subject.before_call("p")


def test_a_success_resets_the_count_of_consecutive_failures() -> None:
    subject = breaker(FakeClock())

    subject.record_failure()
    subject.record_failure()
    subject.record_success()
    subject.record_failure()
    subject.record_failure()

    assert subject.state is BreakerState.CLOSED


def test_breaker_opens_at_the_threshold_and_rejects_calls() -> None:
    subject = open_breaker(FakeClock())

    assert subject.state is BreakerState.OPEN
    with pytest.raises(CircuitOpenError) as caught:
        subject.before_call("openai:x")
    assert caught.value.code == "circuit_open"
    assert "openai:x" in caught.value.message


def test_open_breaker_half_opens_once_the_cooldown_has_passed() -> None:
    clock = FakeClock()
    subject = open_breaker(clock)

    clock.advance(29.9)
    just_before = subject.state
    clock.advance(0.1)

    assert (just_before, subject.state) == (BreakerState.OPEN, BreakerState.HALF_OPEN)


def test_half_open_breaker_lets_exactly_one_probe_through() -> None:
    clock = FakeClock()
    subject = open_breaker(clock)
    clock.advance(30)

    subject.before_call("p")

    with pytest.raises(CircuitOpenError):
        subject.before_call("p")


def test_a_successful_probe_closes_the_breaker() -> None:
    clock = FakeClock()
    subject = open_breaker(clock)
    clock.advance(30)
    subject.before_call("p")

    subject.record_success()

    assert subject.state is BreakerState.CLOSED
    subject.before_call("p")
    subject.before_call("p")


def test_a_failed_probe_reopens_the_breaker_for_a_whole_cooldown() -> None:
    clock = FakeClock()
    subject = open_breaker(clock)
    clock.advance(30)
    subject.before_call("p")

    subject.record_failure()

    assert subject.state is BreakerState.OPEN
    clock.advance(29.9)
    with pytest.raises(CircuitOpenError):
        subject.before_call("p")
    clock.advance(0.1)
    subject.before_call("p")


def test_an_abandoned_probe_lets_the_next_call_probe() -> None:
    clock = FakeClock()
    subject = open_breaker(clock)
    clock.advance(30)
    subject.before_call("p")

    subject.record_abandoned()

    assert subject.state is BreakerState.HALF_OPEN
    subject.before_call("p")


def test_registry_keeps_one_breaker_per_provider() -> None:
    registry = BreakerRegistry(clock=FakeClock())
    policy = BreakerPolicy(failure_threshold=1)

    registry.get("openai:a", policy).record_failure()

    assert registry.get("openai:a", policy) is registry.get("openai:a", policy)
    assert registry.get("openai:a", policy).state is BreakerState.OPEN
    assert registry.get("openai:b", policy).state is BreakerState.CLOSED


# -- retries through the runner, over HTTP -----------------------------------------------


async def test_two_server_errors_then_success_complete_the_run(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    openai_server.fail(503, times=2)
    openai_server.reply("Recovered.")

    events = await turns.run(RunConfig(retry=NO_WAIT))

    assert [e for e in events if e.type is EventType.ERROR] == []
    assert final_text(events) == "Recovered."
    requests = openai_server.requests
    assert len(requests) == 3
    assert requests[0].body == requests[1].body == requests[2].body


async def test_each_retry_is_an_event_on_the_call_span_before_its_answer(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    """A viewer sees the call being retried as it happens: a ``model_retry`` for each
    failed attempt, on the call's span, saying why, how many attempts so far and when the
    next one goes; the call's answer closes the same span, which counts its attempts."""
    openai_server.fail(503, times=2)
    openai_server.reply("Recovered.")

    events = stored(await turns.run(RunConfig(retry=NO_WAIT)))

    kinds = [e.type for e in events]
    assert kinds[2:5] == [EventType.MODEL_RETRY, EventType.MODEL_RETRY, EventType.AGENT_MESSAGE]
    first, second, answer = events[2:5]
    for attempts, retry in enumerate([first, second], start=1):
        assert retry.error is not None and retry.error.failure == "retryable"
        assert (retry.error.code, retry.error.attempts) == (ModelServerError.code, attempts)
        assert retry.text == f"Attempt {attempts} of 3 failed; trying again in 0.0 s."
        assert (retry.span_id, retry.started_at) == (answer.span_id, answer.started_at)
        assert retry.parent_span_id == events[1].span_id  # the agent's span
    [call] = [span for span in spans_of(e.to_wire() for e in events) if span.kind == "model"]
    assert (call.status, call.attributes["attempts"]) == ("ok", 3)
    said = [f"{r.error.code}: {r.error.message}" for r in (first, second) if r.error]
    assert call.attributes["retries"] == said and len(said) == 2
    assert call.attributes["retried_at"] == [first.created_at, second.created_at]
    assert CallLedger().observe_all(events[:4]).retrying  # until the call answers
    assert not CallLedger().observe_all(events).retrying


async def test_a_retry_says_the_backoff_it_waits(turns: Turns, openai_server: OpenAIServer) -> None:
    openai_server.fail(503)
    openai_server.reply("Recovered.")
    policy = RetryPolicy(max_attempts=2, initial_backoff_s=0.3, max_backoff_s=1, jitter=False)

    events = await turns.run(RunConfig(retry=policy))

    [retry] = [e for e in events if e.type is EventType.MODEL_RETRY]
    assert retry.text == "Attempt 1 of 2 failed; trying again in 0.3 s."
    assert final_text(events) == "Recovered."


@pytest.mark.parametrize(
    "inject",
    [
        pytest.param(lambda server: server.fail(429), id="rate-limited"),
        pytest.param(lambda server: server.fail(500), id="server-error"),
        pytest.param(lambda server: server.disconnect(), id="dropped-connection"),
        pytest.param(lambda server: server.hang(), id="no-answer"),
    ],
)
async def test_each_retryable_failure_is_retried(
    turns: Turns, openai_server: OpenAIServer, inject: Callable[[OpenAIServer], None]
) -> None:
    inject(openai_server)
    openai_server.reply("Recovered.")

    events = await turns.run(RunConfig(retry=NO_WAIT, model_timeout_s=0.2))

    assert final_text(events) == "Recovered."
    assert len(openai_server.requests) == 2


async def test_persistent_server_errors_end_the_run_after_max_attempts(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    openai_server.fail(503, times=10)

    events = await turns.run(RunConfig(retry=NO_WAIT))

    assert run_error(events).code == ModelServerError.code
    assert len(openai_server.requests) == NO_WAIT.max_attempts


async def test_a_call_that_failed_for_good_is_a_failed_model_span_not_overhead(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    """Its error event records the call (its span, when it began, how long it took, its
    attempts), so the time spent retrying is the model's, not the runner's overhead."""
    openai_server.fail(503, times=10)

    events = stored(await turns.run(RunConfig(retry=NO_WAIT)))

    start, failure = events[1], events[-1]
    assert start.type is EventType.AGENT_START and failure.error is not None
    assert failure.error.attempts == NO_WAIT.max_attempts == len(openai_server.requests)
    assert failure.span_id is not None and failure.started_at is not None
    assert failure.parent_span_id == start.span_id  # the agent the call was made in
    assert failure.latency_ms is not None and failure.latency_ms > 0
    assert failure.started_at < failure.created_at
    spans = {span.kind: span for span in spans_of(e.to_wire() for e in events)}
    call, agent = spans["model"], spans["agent"]
    assert (call.span_id, call.parent_span_id, call.status) == (
        failure.span_id,
        agent.span_id,
        "error",
    )
    assert (call.start, call.end) == (failure.started_at, failure.created_at)
    assert call.error == f"model_server_error: {failure.error.message}"
    assert call.attributes["attempts"] == 3 and call.cost is None
    assert agent.status == "error" and agent.error == call.error


async def test_a_refused_connection_says_why_and_where_never_the_query_or_credentials(
    loopback_http_clients: dict[str, Any],
) -> None:
    """The SDK's own words ("Connection error.") say neither what failed nor where: the
    transport's reason and the address called are added, without what a URL may carry
    a key in."""
    address = unreachable_base_url().removeprefix("http://")
    base_url = f"http://user:secret-pw@{address}?key=secret-key"
    model = openai_compatible(
        model=MODEL, base_url=base_url, api_key="sk-test", **loopback_http_clients
    )
    agent = LlmAgent("assistant", model=model)
    runner = Runner(
        agent,
        session_service=InMemorySessionService(),
        run_config=RunConfig(retry=NO_WAIT),
        breakers=BreakerRegistry(),
    )

    events = [e async for e in runner.astream(user_id="u", session_id="s", message="hi")]

    error = run_error(events)
    assert error.code == "model_connection_error"
    assert error.message.startswith("OpenAIConnectionError: Connection error. (")
    assert "Connect call failed" in error.message  # the transport's reason
    assert f"; http://{address}/" in error.message  # the address called
    assert "secret" not in error.message


async def test_a_call_its_breaker_refused_is_a_failed_span_of_no_attempt(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    config = RunConfig(retry=NO_WAIT, breaker=BreakerPolicy(failure_threshold=1))
    openai_server.fail(503)
    await turns.run(config)

    refused = stored(await turns.run(config))[-1]

    assert refused.error is not None and refused.error.code == "circuit_open"
    assert refused.error.attempts == 0 and refused.span_id is not None
    [call] = [span for span in spans_of(e.to_wire() for e in [refused]) if span.kind == "model"]
    assert call.status == "error" and call.attributes["attempts"] == 0


async def test_a_bad_request_is_not_retried(turns: Turns, openai_server: OpenAIServer) -> None:
    openai_server.fail(400, message="unknown parameter")
    openai_server.reply("never sent")

    events = await turns.run(RunConfig(retry=NO_WAIT))

    error = run_error(events)
    assert error.code == ModelRequestError.code
    assert "unknown parameter" in error.message
    assert len(openai_server.requests) == 1
    assert openai_server.pending == 1


async def test_a_stream_that_stalls_is_retried_from_the_start(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    openai_server.reply("one two three four", hold_after=2)
    openai_server.reply("one two three four")

    events = await turns.run(RunConfig(retry=NO_WAIT, model_timeout_s=0.2))

    partials = [e.text for e in events if e.partial]
    assert partials == ["one ", "two ", "one ", "two ", "three ", "four"]
    assert [e.text for e in stored(events) if e.type is EventType.AGENT_MESSAGE] == [
        "one two three four"
    ]
    assert len(openai_server.requests) == 2


async def test_the_model_call_budget_counts_retries(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    openai_server.fail(503, times=10)
    config = RunConfig(retry=NO_WAIT.model_copy(update={"max_attempts": 5}), max_model_calls=2)

    events = await turns.run(config)

    error = run_error(events)
    assert (error.code, error.limit) == (LimitExceededError.code, "max_model_calls")
    assert len(openai_server.requests) == 2


async def test_retries_wait_the_policy_backoff_between_attempts(
    turns: Turns, openai_server: OpenAIServer, breakers: BreakerRegistry
) -> None:
    openai_server.fail(503, times=2)
    openai_server.reply("Recovered.")
    policy = RetryPolicy(max_attempts=3, initial_backoff_s=0.5, multiplier=3, max_backoff_s=10)
    waits: list[float] = []

    async def record_wait(seconds: float) -> None:
        waits.append(seconds)

    model = turns.model()
    call = ResilientCall(
        model=model,
        retry=policy,
        breaker=breakers.get(model.provider_key, BreakerPolicy()),
        attempt_timeout_s=10,
        sleep=record_wait,
        rand=lambda: 0.5,
    )
    request = LlmRequest(messages=[ChatMessage(role="user", text="hi")])

    responses = [r async for r in call.astream(request)]

    assert responses[-1].text == "Recovered."
    assert waits == [0.25, 0.75]


# -- the breaker across runs ------------------------------------------------------------


async def test_repeated_failed_runs_open_the_breaker_and_the_next_run_fails_fast(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any]
) -> None:
    clock = FakeClock()
    turns = Turns(openai_server, loopback_http_clients, BreakerRegistry(clock=clock))
    config = RunConfig(
        retry=NO_WAIT.model_copy(update={"max_attempts": 1}),
        breaker=BreakerPolicy(failure_threshold=2, cooldown_s=30),
    )
    openai_server.fail(503, times=2)
    openai_server.reply("Back again.")

    first, second = await turns.run(config), await turns.run(config)
    fast_failure = await turns.run(config)

    assert run_error(first).code == run_error(second).code == ModelServerError.code
    assert run_error(fast_failure).code == CircuitOpenError.code == "circuit_open"
    assert len(openai_server.requests) == 2

    clock.advance(30)
    probe = await turns.run(config)

    assert final_text(probe) == "Back again."
    assert len(openai_server.requests) == 3
    breaker_ = turns.breakers.get(turns.model().provider_key, config.breaker)
    assert breaker_.state is BreakerState.CLOSED


async def test_a_breaker_that_opens_during_retries_stops_them(
    turns: Turns, openai_server: OpenAIServer
) -> None:
    openai_server.fail(503, times=10)
    config = RunConfig(
        retry=NO_WAIT.model_copy(update={"max_attempts": 5}),
        breaker=BreakerPolicy(failure_threshold=2),
    )

    events = await turns.run(config)

    assert run_error(events).code == CircuitOpenError.code
    assert len(openai_server.requests) == 2


async def test_a_run_cancelled_during_the_half_open_probe_lets_a_later_run_probe(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any]
) -> None:
    clock = FakeClock()
    turns = Turns(openai_server, loopback_http_clients, BreakerRegistry(clock=clock))
    config = RunConfig(
        retry=NO_WAIT.model_copy(update={"max_attempts": 1}),
        breaker=BreakerPolicy(failure_threshold=1, cooldown_s=30),
    )
    openai_server.fail(503)
    openai_server.reply("one two three", hold_after=1)
    openai_server.reply("Back again.")
    assert run_error(await turns.run(config)).code == ModelServerError.code
    clock.advance(30)

    cancelled = await turns.run(config, cancel_at_first_token=True)
    later = await turns.run(config)

    errors = [e.error.code for e in cancelled if e.type is EventType.ERROR and e.error]
    assert errors == [CUT_OFF, "cancelled"]  # the probe's call cut off, then the run
    assert final_text(later) == "Back again."
    assert len(openai_server.requests) == 3
