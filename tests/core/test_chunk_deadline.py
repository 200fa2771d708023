"""The limit on each wait for a model's next chunk (``RunConfig.model_timeout_s``), as
``ResilientCall`` applies it with one timer an attempt (``ChunkDeadline``): a model
whose chunks arrive on a clock of its own (the edge of the world), driven through
the real retry loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field

import pytest

from agents_core import BreakerPolicy, RetryPolicy
from agents_core.exceptions import ModelTimeoutError
from agents_core.llm import BaseLlm, ChatMessage, LlmRequest, LlmResponse
from agents_core.llm.resilience import CircuitBreaker, ResilientCall

LIMIT_S = 0.15
HANG_S = 10.0
"""Long enough for any limit here: a cut that never comes fails the test, not hangs it."""
REQUEST = LlmRequest(messages=[ChatMessage(role="user", text="hi")])


@dataclass(slots=True)
class PacedModel(BaseLlm):
    """Streams ``words``, waiting ``delays[i]`` seconds before word ``i`` (the last delay
    repeats), then the whole answer. A delay of ``None`` hangs (``HANG_S``)."""

    words: Sequence[str]
    delays: Sequence[float | None]
    attempts: int = 0
    chunks_sent: list[str] = field(default_factory=list)

    @property
    def provider_key(self) -> str:
        return "paced"

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        self.attempts += 1
        for index, word in enumerate(self.words):
            delay = self.delays[min(index, len(self.delays) - 1)]
            await asyncio.sleep(HANG_S if delay is None else delay)
            self.chunks_sent.append(word)
            yield LlmResponse(text=word, partial=True)
        yield LlmResponse(text="".join(self.words))


def call(model: BaseLlm, *, limit: float | None = LIMIT_S, attempts: int = 1) -> ResilientCall:
    return ResilientCall(
        model=model,
        retry=RetryPolicy(max_attempts=attempts, initial_backoff_s=0, max_backoff_s=0),
        breaker=CircuitBreaker(BreakerPolicy()),
        attempt_timeout_s=limit,
    )


async def answer(resilient: ResilientCall, *, hold_s: float = 0.0) -> str:
    """The complete answer, the caller holding each chunk ``hold_s`` seconds."""
    final = ""
    async for response in resilient.astream(REQUEST):
        if response.partial:
            await asyncio.sleep(hold_s)
        else:
            final = response.text
    return final


async def test_a_stream_longer_in_all_than_the_limit_is_not_cut() -> None:
    # Eight waits of a third of the limit: the timer fires mid-stream and moves on.
    model = PacedModel(words=[f"w{i} " for i in range(8)], delays=[LIMIT_S / 3])

    assert await answer(call(model)) == "".join(f"w{i} " for i in range(8))
    assert model.attempts == 1


async def test_the_time_the_caller_holds_a_chunk_does_not_count() -> None:
    model = PacedModel(words=["a ", "b ", "c"], delays=[0])

    assert await answer(call(model), hold_s=2 * LIMIT_S) == "a b c"


async def test_a_wait_past_the_limit_is_cut_as_a_model_timeout() -> None:
    model = PacedModel(words=["one ", "two "], delays=[0, None])

    with pytest.raises(ModelTimeoutError, match=f"exceeded {LIMIT_S}s"):
        await answer(call(model))

    assert model.chunks_sent == ["one "]
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0  # the cut's cancellation withdrawn


async def test_a_wait_that_outlasts_the_limit_after_a_quick_start_is_cut() -> None:
    # The first wait ends before the timer fires; the second starts later, so the timer
    # finds it young, moves to its end, and cuts it there.
    model = PacedModel(words=["one ", "two "], delays=[LIMIT_S * 2 / 3, None])

    with pytest.raises(ModelTimeoutError):
        await answer(call(model))

    assert model.chunks_sent == ["one "]


async def test_a_cut_attempt_is_retried_with_a_limit_of_its_own() -> None:
    class StallsOnce(PacedModel):
        async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
            self.delays = [0, None] if self.attempts == 0 else [0]
            async for response in PacedModel.astream(self, request):
                yield response

    model = StallsOnce(words=["one ", "two"], delays=[0])

    assert await answer(call(model, attempts=2)) == "one two"
    assert model.attempts == 2


async def test_a_cancel_from_outside_during_a_wait_stays_a_cancel() -> None:
    model = PacedModel(words=["one "], delays=[None])
    running = asyncio.create_task(answer(call(model, limit=60)))
    await asyncio.sleep(0.05)

    running.cancel()

    with pytest.raises(asyncio.CancelledError):
        await running
    assert running.cancelled()


async def test_a_cancel_that_meets_the_cut_stays_a_cancel() -> None:
    # The caller cancels the task in the same instant as the limit cuts the wait: the
    # caller's cancellation wins, as with ``asyncio.timeout``.
    model = PacedModel(words=["one "], delays=[None])
    running = asyncio.create_task(answer(call(model, limit=0.05)))
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0)  # the call is waiting on its first chunk
    loop.call_at(loop.time() + 0.05, running.cancel)

    with pytest.raises(asyncio.CancelledError):
        await running


async def test_no_limit_never_cuts() -> None:
    model = PacedModel(words=["slow"], delays=[2 * LIMIT_S])

    assert await answer(call(model, limit=None)) == "slow"


async def test_a_timeout_the_model_raises_itself_is_a_model_timeout_and_retried() -> None:
    class TimesOutOnce(PacedModel):
        async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
            if self.attempts == 0:
                self.attempts += 1
                yield LlmResponse(text="one ", partial=True)
                raise TimeoutError("read timed out")
            async for response in PacedModel.astream(self, request):
                yield response

    model = TimesOutOnce(words=["one ", "two"], delays=[0])

    assert await answer(call(model, attempts=2)) == "one two"
    assert model.attempts == 2
    with pytest.raises(ModelTimeoutError, match="read timed out"):
        await answer(call(TimesOutOnce(words=["one "], delays=[0])))
