"""Running an eval to its end in this process (``manage.py run_evals``): its case runs
execute inline, on this process's event loop, as in a server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

from studio import runs
from studio.db import db_sync_to_async
from studio.evals.engine import advance
from studio.models.evals import ACTIVE_EVAL_STATUSES, EvalRun

POLL_S = 0.2


async def run_to_end(
    start: Callable[[], EvalRun], *, poll_s: float = POLL_S, timeout_s: float | None = None
) -> EvalRun:
    """Bind an inline executor to the running loop, start an eval with ``start()`` (so
    its first runs reach this loop) and advance it until it ended (or ``timeout_s``
    passed: ``TimeoutError``, its runs then end interrupted with the executor). This
    process does not sweep like a server (it leaves other evals and runs alone); if it
    dies, the servers' sweeps recover its runs and go on with its eval."""
    executor = runs.configure("inline")
    executor.start(sweeps=False)
    try:
        eval_run = await db_sync_to_async(start)()
        async with asyncio.timeout(timeout_s):
            while True:
                await advance(eval_run.pk)
                status = await _status(eval_run.pk)
                if status not in ACTIVE_EVAL_STATUSES:
                    break
                await asyncio.sleep(poll_s)
        return await EvalRun.objects.select_related(
            "agent_version__agent", "dataset_version__dataset"
        ).aget(pk=eval_run.pk)
    finally:
        await executor.aclose()


async def _status(eval_run_id: uuid.UUID) -> str:
    status: str = (
        await EvalRun.objects.filter(pk=eval_run_id).values_list("status", flat=True).aget()
    )
    return status
