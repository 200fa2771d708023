"""Relaying approval decisions and answers to the worker executing a run (worker
execution).

A decision reaches whichever server it is sent to; services checked in the database
that the call waits for one. The server relays it through the channel layer to group
``run.<run uuid>``, which the worker executing the run listens to, and waits up to
``DECIDE_TIMEOUT_S`` for its answer: the worker's broker checks it as it would inline
(a decision already taken, or for other arguments, is refused).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
import uuid
from collections.abc import Callable
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer
from pydantic import TypeAdapter, ValidationError

from agents_core.approvals import ApprovalBroker, ApprovalError, HumanReply, Reply
from studio.runs.executor import refusal

logger = logging.getLogger("studio.worker")

DECIDE_TIMEOUT_S = 5.0
"""How long a server waits for the worker executing a run to answer a decision."""


def run_group(run_id: uuid.UUID | str) -> str:
    """The group the worker executing run ``run_id`` listens to for decisions."""
    return f"run.{run_id}"


# The server's side


_REPLY: TypeAdapter[Reply] = TypeAdapter(HumanReply)


async def relay_decision(run_id: uuid.UUID, session_key: str, decision: Reply) -> None:
    """Deliver ``decision`` to the worker executing run ``run_id``; ``ConflictError``
    when the worker refused it or did not answer in time."""
    layer = _layer()
    reply_to = await layer.new_channel()
    message = {
        "type": "approval.decide",
        "session_key": session_key,
        "decision": decision.model_dump(mode="json"),
        "reply_to": reply_to,
        # Wall-clock: the worker drops a decision that arrives after the server gave up.
        "answer_by": time.time() + DECIDE_TIMEOUT_S,
    }
    try:
        async with asyncio.timeout(DECIDE_TIMEOUT_S):
            await layer.group_send(run_group(run_id), message)
            answer = await layer.receive(reply_to)
    except TimeoutError:
        late = "the worker executing this run did not answer in time; try again"
        raise refusal(decision, late, delivered=False) from None
    if answer.get("refused"):
        raise refusal(decision, str(answer["refused"]))


async def ask_to_show_calls(run_id: uuid.UUID) -> None:
    """Ask the worker executing run ``run_id`` to send its model calls in flight that
    showed themselves again (a viewer joined); nothing waits for it."""
    try:
        await _layer().group_send(run_group(run_id), {"type": SHOW_CALLS})
    except Exception:  # the viewer sees the call once it streams or ends
        logger.info("run %s: could not ask for its calls in flight", run_id, exc_info=True)


# The worker's side


STOP_TIMEOUT_S = 2.0
"""How long a run's end waits for its listener to take the message that stops it."""
_STOP = "relay.stop"
SHOW_CALLS = "live.show_calls"


class DecisionListener:
    """Delivers the decisions servers relay for run ``run_id`` to ``broker``, answering
    each, from ``listen`` until ``stop``. A channel layer failure is retried, never
    fatal to the run.

    ``stop`` ends the wait for the next message with a message of its own, rather than
    by cancelling it: a receive cancelled while it waits loses the channel layer its
    Redis connection, and the worker's next run opens a new one (the worker keeps one
    event loop, and with it its connections, from run to run)."""

    def __init__(
        self, run_id: uuid.UUID, broker: ApprovalBroker, show_calls: Callable[[], None]
    ) -> None:
        self._run_id = run_id
        self._broker = broker
        self._show_calls = show_calls  # a viewer joined (``ask_to_show_calls``)
        self._layer = _layer()
        self._channel: str | None = None
        self._stop_word = secrets.token_hex(8)
        self._stopping = False

    async def listen(self) -> None:
        layer, group = self._layer, run_group(self._run_id)
        self._channel = channel = await layer.new_channel()
        pause = 0.1
        try:
            while not self._stopping:
                try:
                    await layer.group_add(group, channel)
                    while True:
                        message = await layer.receive(channel)
                        if message.get("type") == _STOP and message.get("word") == self._stop_word:
                            return
                        if message.get("type") == SHOW_CALLS:
                            self._show_calls()
                            continue
                        await _answer(layer, self._broker, message)
                        pause = 0.1
                except Exception:
                    logger.warning(
                        "run %s: no decisions until Redis is back", self._run_id, exc_info=True
                    )
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 2.0)
        finally:
            await asyncio.shield(_leave(layer, group, channel))

    async def stop(self, listening: asyncio.Task[None]) -> None:
        """End ``listening`` (the task running ``listen``): by its stop message when it
        waits for one, cancelled when it does not take it within ``STOP_TIMEOUT_S``."""
        self._stopping = True
        if self._channel is not None and not listening.done():
            try:
                async with asyncio.timeout(STOP_TIMEOUT_S):
                    await self._layer.send(self._channel, {"type": _STOP, "word": self._stop_word})
                    await asyncio.shield(listening)
            except Exception:
                logger.info("run %s: stopping its decisions listener", self._run_id, exc_info=True)
        listening.cancel()
        await asyncio.gather(listening, return_exceptions=True)


async def _leave(layer: BaseChannelLayer, group: str, channel: str) -> None:
    try:
        await layer.group_discard(group, channel)
    except Exception:  # the group expires on its own
        logger.info("could not leave %s", group, exc_info=True)


async def _answer(layer: BaseChannelLayer, broker: ApprovalBroker, message: Any) -> None:
    try:
        reply_to = str(message["reply_to"])
        decision = _REPLY.validate_python(message["decision"])
        session_key = str(message["session_key"])
        answer_by = float(message["answer_by"])
    except (KeyError, TypeError, ValueError, ValidationError):
        logger.warning("ignored a malformed decision message")
        return
    if time.time() > answer_by:
        return  # the server already told its client the decision was not delivered
    answer: dict[str, Any] = {"type": "approval.answer"}
    try:
        broker.decide(decision, session_id=session_key)
    except ApprovalError as exc:
        answer["refused"] = exc.message
    await layer.send(reply_to, answer)


def _layer() -> BaseChannelLayer:
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("worker execution needs a channel layer (REDIS_URL)")
    return layer
