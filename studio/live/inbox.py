"""The approval inbox's live channel: group ``approvals.<user id>`` carries
``{"type": "inbox.changed"}`` whenever one of the user's calls starts or stops waiting
for a decision or an answer (asked, decided, answered, timed out, or its run ended).
Its sockets (``studio.consumers.inbox``) then read the user's pending approvals and
questions from the database, so a dropped message only delays the next read, never
loses a change."""

from __future__ import annotations

import asyncio
import logging

from channels.layers import get_channel_layer

logger = logging.getLogger("studio.live")

NOTIFY_TIMEOUT_S = 5.0


def inbox_group(user_id: int) -> str:
    return f"approvals.{user_id}"


async def notify_inbox(user_id: int) -> None:
    """Tell ``user_id``'s inbox sockets to read again. Never raises."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async with asyncio.timeout(NOTIFY_TIMEOUT_S):
            await layer.group_send(inbox_group(user_id), {"type": "inbox.changed"})
    except Exception:  # the sockets resync on their own
        logger.warning("could not notify inbox of user %s", user_id, exc_info=True)
