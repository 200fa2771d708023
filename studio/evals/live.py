"""An eval run's live channel: group ``evals.<id>`` carries
``{"type": "eval.changed", "results": [ids]}`` whenever some of its case results (or
its status and summary) changed. Its sockets (``studio.consumers.evals``) then read
those results and the eval from the database, so a dropped message only delays what
the next one (or the socket's periodic resync) brings."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger("studio.evals")

NOTIFY_TIMEOUT_S = 5.0


def eval_group(eval_run_id: uuid.UUID | str) -> str:
    return f"evals.{eval_run_id}"


async def notify(eval_run_id: uuid.UUID, result_ids: Sequence[uuid.UUID] = ()) -> None:
    """Tell ``eval_run_id``'s sockets what changed. Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "eval.changed", "results": [str(rid) for rid in result_ids]}
    try:
        async with asyncio.timeout(NOTIFY_TIMEOUT_S):
            await layer.group_send(eval_group(eval_run_id), message)
    except Exception:  # the sockets resync on their own
        logger.warning("could not notify eval %s's viewers", eval_run_id, exc_info=True)


def notify_sync(eval_run_id: uuid.UUID, result_ids: Sequence[uuid.UUID] = ()) -> None:
    """``notify`` from synchronous code (a view, a transaction's commit)."""
    try:
        async_to_sync(notify)(eval_run_id, result_ids)
    except Exception:  # e.g. called inside a running loop's thread: the resync covers it
        logger.warning("could not notify eval %s's viewers", eval_run_id, exc_info=True)
