"""A tool round of one call runs as a TaskGroup would run it (``agents_core._tool_round``)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from agents_core._tool_round import _run_alone

seen: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="outside")


async def test_a_lone_call_that_fails_raises_an_exception_group_like_a_task_group() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    with pytest.raises(ExceptionGroup) as raised:
        await _run_alone(fails())
    assert [type(e) for e in raised.value.exceptions] == [RuntimeError]


async def test_a_lone_call_runs_in_a_context_of_its_own() -> None:
    async def sets() -> None:
        seen.set("inside")

    await _run_alone(sets())
    assert seen.get() == "outside"


async def test_a_lone_call_is_cancelled_with_its_round() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def waits() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    round_ = asyncio.create_task(_run_alone(waits()))
    await started.wait()
    round_.cancel()
    with pytest.raises(asyncio.CancelledError):
        await round_
    assert cancelled.is_set()
