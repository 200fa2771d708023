"""Channel layers for Studio's two configurations (``CHANNEL_LAYERS`` in settings).

``InMemoryChannelLayer`` (the embedded default) is Channels' own with fan-out that costs
one queue put per viewer. Channels' version scans every channel and every group
membership for expired messages on each ``receive`` and ``group_send`` (so a message to
N viewers costs O(N²)), deep-copies the message for each recipient and starts a task per
recipient, and makes a new queue for every message a channel receives. Here expiry runs
at most once every ``CLEAN_INTERVAL_S`` (and drops the queues nobody waits on), a group
message is copied once and that copy shared by its recipients (consumers only read
messages), and it is put straight into their queues.

``RedisChannelLayer`` (``REDIS_URL``) is ``channels_redis``'s with a ``receive`` that
waits out a Redis outage instead of raising: the consumer's receive loop would otherwise
end with the exception and Daphne close its socket with 1011. Messages sent meanwhile
are lost; viewers catch up from the database (``studio.live``: the layer is only a fast
path).

Sessions' live messages take their own layer, ``live`` (``studio.live.protocol.LAYER``):
the same in-memory layer in the embedded default and, with Redis, ``channels_redis``'s
publish/subscribe layer. There a message is one ``PUBLISH``, which Redis pushes to the
servers subscribed to the session's group, against this layer's three round trips to
send it (expire the group, list it, add the message to each member's sorted set) and
four to receive it (a clean-up script, a blocking pop, a backup copy and its removal).
Nothing is kept for a server that is away: its viewers catch up from the database, as
after an outage. Its receive reads a queue in the process, so an outage never reaches
it; its subscriber connection reconnects and subscribes again by itself
(``tests/scale/test_redis_stall.py``).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import time
from typing import Any

from channels import layers

logger = logging.getLogger("studio.layers")

CLEAN_INTERVAL_S = 1.0
"""How often the in-memory layer looks for expired messages and group memberships."""
RETRY_FIRST_S = 0.1
RETRY_MAX_S = 2.0
"""How long a receive waits before trying Redis again: doubling from the first to the max."""


class InMemoryChannelLayer(layers.InMemoryChannelLayer):  # type: ignore[misc]  # untyped
    """Channels' in-memory layer with fan-out linear in the group's size (see above)."""

    _cleaned_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at >= CLEAN_INTERVAL_S:
            self._cleaned_at = now
            super()._clean_expired()
            for channel, queue in list(self.channels.items()):
                if queue.empty() and not queue._getters:  # nobody receives from it now
                    del self.channels[channel]

    def _queue(self, channel: str) -> asyncio.Queue[tuple[float, dict[str, Any]]]:
        queue: asyncio.Queue[tuple[float, dict[str, Any]]] | None = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        return queue

    async def receive(self, channel: str) -> dict[str, Any]:
        self.require_valid_channel_name(channel)
        self._clean_expired()
        _, message = await self._queue(channel).get()
        return message

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"  # noqa: S101 (Channels' check)
        self.require_valid_group_name(group)
        self._clean_expired()
        members = self.groups.get(group)
        if not members:
            return
        shared = (time.time() + self.expiry, copy.deepcopy(message))
        for channel in list(members):
            queue = self._queue(channel)
            if not queue.full():  # a full channel drops the message, as Channels' does
                queue.put_nowait(shared)


@functools.cache
def _redis_layer() -> type:
    from channels_redis import core  # type: ignore[import-untyped]
    from redis import exceptions

    class RedisChannelLayer(core.RedisChannelLayer):  # type: ignore[misc]  # untyped
        """``channels_redis``'s layer whose ``receive`` rides out a Redis outage."""

        async def receive(self, channel: str) -> dict[str, Any]:
            wait = RETRY_FIRST_S
            while True:
                try:
                    message: dict[str, Any] = await super().receive(channel)
                except (exceptions.RedisError, OSError) as exc:
                    logger.warning("Redis receive failed (%s); retrying in %.1fs", exc, wait)
                    await asyncio.sleep(wait)
                    wait = min(wait * 2, RETRY_MAX_S)
                else:
                    return message

    RedisChannelLayer.__module__, RedisChannelLayer.__qualname__ = __name__, "RedisChannelLayer"
    return RedisChannelLayer


def __getattr__(name: str) -> type:
    # ``RedisChannelLayer`` is made on first use: only the scaled-out configuration
    # imports Redis (a third of a second, at the first websocket otherwise).
    if name == "RedisChannelLayer":
        return _redis_layer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
