"""``Runner``: runs an agent for one user turn against a session service."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

from agents_core import ledger
from agents_core._channel import Channel
from agents_core.after_turn import AfterTurnCall
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalBroker, RunParked
from agents_core.artifacts import ArtifactService
from agents_core.blobs import BlobStore
from agents_core.compaction import CompactionConfig, compact
from agents_core.config import RunConfig
from agents_core.context import CancellationToken, Context, Invocation, InvocationBudget
from agents_core.events import ErrorInfo, Event, EventType, TextPart, new_id, user_message
from agents_core.exceptions import AgentsCoreError, LimitExceededError, SessionError, failed_call
from agents_core.ledger import CallLedger
from agents_core.llm.resilience import DEFAULT_BREAKERS, BreakerRegistry
from agents_core.memory import MemoryConfig, save_key_facts
from agents_core.model_gates import RateLimiter, ResponseCache
from agents_core.pausing import PauseGate, stop_clock_while_held
from agents_core.resume import ResumePoint
from agents_core.sessions.base import BaseSessionService, Session
from agents_core.spend import SpendGuard
from agents_core.telemetry import TelemetryDispatcher, TelemetrySink

logger = logging.getLogger("agents_core.runner")

CANCELLED = "cancelled"
_AGENT_DEPTH = {EventType.AGENT_START: 1, EventType.AGENT_END: -1}


class Runner:
    """Loads or creates the session, stores the user's message, runs the root agent and
    stores each complete event (applying its state delta, assigning its seq) before
    yielding it. Partial events are yielded and never stored.

    Failures end the turn with one terminal ``error`` event; cancellation (through the
    ``CancellationToken``) ends it with an ``error`` event whose code is ``cancelled``.
    A ``PauseGate`` pauses it between steps (``run_paused`` ... ``run_resumed``); the
    time it spends paused does not count towards ``max_wall_time_s``.
    With ``compaction`` set, a turn that ended normally may end with a compaction event.
    """

    def __init__(
        self,
        agent: BaseAgent,
        *,
        session_service: BaseSessionService,
        app_name: str = "agents",
        run_config: RunConfig | None = None,
        telemetry: Sequence[TelemetrySink] = (),
        breakers: BreakerRegistry = DEFAULT_BREAKERS,
        approvals: ApprovalBroker | None = None,
        compaction: CompactionConfig | None = None,
        spend_guard: SpendGuard | None = None,
        rate_limiter: RateLimiter | None = None,
        response_cache: ResponseCache | None = None,
        blobs: BlobStore | None = None,
        memory: MemoryConfig | None = None,
        artifacts: ArtifactService | None = None,
    ) -> None:
        self.agent = agent
        self.session_service = session_service
        self.app_name = app_name
        self.run_config = run_config or RunConfig()
        self.telemetry = tuple(telemetry)
        self.breakers = breakers
        self.approvals = approvals or ApprovalBroker()
        """Where approval decisions for this runner's tool calls are delivered."""
        self.compaction = compaction
        self.spend_guard = spend_guard
        """Asked before each model call whether it may be made (``agents_core.spend``)."""
        self.rate_limiter = rate_limiter
        self.response_cache = response_cache
        """Shared limits and kept answers of named models (``agents_core.model_gates``)."""
        self.blobs = blobs
        """Where files attached to user messages are read from (``agents_core.blobs``)."""
        self.memory = memory
        """The memory the run's tools use, and whether turns save their key facts."""
        self.artifacts = artifacts
        """Where the run's tools save and load the session's files (``agents_core.artifacts``)."""

    async def astream(
        self,
        *,
        user_id: str,
        session_id: str,
        message: str | Event | None,
        run_config: RunConfig | None = None,
        cancel_token: CancellationToken | None = None,
        pause_gate: PauseGate | None = None,
        invocation_id: str | None = None,
    ) -> AsyncGenerator[Event]:
        """Run one turn; yields the stored user event, then every event of the turn.

        ``message`` is the user's text, or their ``user_message`` event when the caller
        stored it already (so that nothing that can fail or wait comes before it): the
        turn then takes that event's invocation id and does not store it again.

        ``None`` resumes the session from its record (an interrupted turn): a new
        invocation with no user message and no input of its own, whose agents read the
        record and pick up where it stopped (``agents_core.resume``): workflow children
        that finished are skipped, calls closed ``not_run`` are retried, and calls closed
        ``in_doubt`` never run again (their tool's failure policy says what follows).
        ``invocation_id`` names that invocation (a caller that records it beforehand);
        a new id by default. With a message, the message's invocation is the turn's."""
        if invocation_id is not None and message is not None:
            raise SessionError("invocation_id names a resumed invocation: message must be None")
        session = await self._load_session(user_id, session_id)
        telemetry = TelemetryDispatcher(self.telemetry)
        try:
            async with contextlib.aclosing(
                self._turn(
                    session,
                    message,
                    invocation_id,
                    run_config or self.run_config,
                    _Controls(cancel_token or CancellationToken(), pause_gate or PauseGate()),
                    telemetry,
                )
            ) as events:
                async for event in events:
                    yield event
        finally:
            await telemetry.aclose()

    async def _turn(
        self,
        session: Session,
        message: str | Event | None,
        resumed_as: str | None,
        config: RunConfig,
        controls: _Controls,
        telemetry: TelemetryDispatcher,
    ) -> AsyncGenerator[Event]:
        token = controls.cancel_token
        invocation_id, text = resumed_as or new_id(), ""  # resuming from the record
        if message is not None:
            user_event = await self._opening(session, message, telemetry)
            yield user_event
            invocation_id, text = user_event.invocation_id, user_event.text
        channel = Channel()
        ctx = Context(
            session=session,
            invocation=Invocation(
                id=invocation_id,
                run_config=config,
                budget=InvocationBudget(config),
                breakers=self.breakers,
                event_callback=channel.send,
                post=channel.post,
                cancel_token=token,
                approvals=self.approvals,
                pause_gate=controls.pause_gate,
                resume=ResumePoint.of(session.events) if message is None else None,
                spend_guard=self.spend_guard,
                rate_limiter=self.rate_limiter,
                response_cache=self.response_cache,
                blobs=self.blobs,
                memory=self.memory,
                artifacts=self.artifacts,
            ),
            user_input=text,
        )
        # Eager: the agent runs at once to its first wait (agent_start sent), saving a loop
        # trip a turn; not when the turn is cancelled already (the agent must not start).
        producer = asyncio.Task(
            self._produce(ctx, channel),
            loop=asyncio.get_running_loop(),
            name=f"invocation-{invocation_id}",
            eager_start=not token.cancelled,
        )
        producer.add_done_callback(lambda _: channel.close())
        token.on_cancel(producer.cancel)
        # Agents started and not yet ended. Back at zero, the root agent has finished: a
        # cancel arriving while the producer merely winds down must not mark the turn
        # cancelled after its agent_end.
        open_agents, finished = 0, False
        calls = CallLedger()
        stored_last: Event | None = None
        try:
            while (item := await channel.receive()) is not None:
                event, ack = item
                if event.is_terminal_error:
                    async for closing in self._close_calls(session, ctx, calls, event, telemetry):
                        yield closing
                stored = stored_last = await self._store(session, event, telemetry)
                calls.observe(stored)
                if ack is not None and not ack.done():
                    ack.set_result(stored)
                open_agents += _AGENT_DEPTH.get(stored.type, 0)
                finished = open_agents == 0 and stored.type is EventType.AGENT_END
                yield stored
            cancelled = producer.cancelled() and token.cancelled and not finished
            if stored_last is not None and stored_last.type is EventType.RUN_PARKED:
                return  # not over: it goes on from the record once decided
            async for stored in self._finish(session, ctx, calls, cancelled, telemetry):
                yield stored
        finally:
            if not producer.done():
                producer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await producer

    async def _opening(
        self, session: Session, message: str | Event, telemetry: TelemetryDispatcher
    ) -> Event:
        """The turn's stored user message."""
        if isinstance(message, Event):
            user_event = _stored_user_message(session, message)
            telemetry.submit(user_event)
            return user_event
        return await self._store(session, user_message(session.id, message), telemetry)

    def run(self, *, user_id: str, session_id: str, message: str) -> list[Event]:
        """Blocking convenience: run one turn and return its stored events."""

        async def collect() -> list[Event]:
            stream = self.astream(user_id=user_id, session_id=session_id, message=message)
            return [event async for event in stream if not event.partial]

        return asyncio.run(collect())

    async def _load_session(self, user_id: str, session_id: str) -> Session:
        found = await self.session_service.get_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )
        if found is not None:
            return found
        return await self.session_service.create_session(
            app_name=self.app_name, user_id=user_id, session_id=session_id
        )

    async def _store(self, session: Session, event: Event, telemetry: TelemetryDispatcher) -> Event:
        if not event.partial:
            event = await self.session_service.append_event(session, event)
        telemetry.submit(event)
        return event

    async def _finish(
        self,
        session: Session,
        ctx: Context,
        calls: CallLedger,
        cancelled: bool,
        telemetry: TelemetryDispatcher,
    ) -> AsyncGenerator[Event]:
        """The turn's last events: its cancellation (the calls it left open answered
        first) or, when it ended normally, its compaction summary if one is due (its key
        facts saved to memory first, when the runner's memory asks for them), each call
        shown while it is slow to answer (``agents_core.after_turn``)."""
        if cancelled:
            reason = ctx.invocation.cancel_token.reason or CANCELLED
            ending = self._error_event(ctx, CANCELLED, reason)
            async for closing in self._close_calls(session, ctx, calls, ending, telemetry):
                yield closing
            yield await self._store(session, ending, telemetry)
            return
        stop = ctx.invocation.cancel_token  # asked once the agent is done: no more calls
        memory = self.memory
        facts = memory.key_facts if memory is not None else None
        if memory and facts and not stop.cancelled and not _failed(session, ctx.invocation_id):
            call = AfterTurnCall.start(session.events, ctx.invocation_id)
            saving = save_key_facts(
                session.events,
                memory,
                user_id=session.user_id,
                session_id=session.id,
                invocation_id=ctx.invocation_id,
                call=call,
            )
            shown = call.shown_if_slow(
                saving, EventType.MEMORY_SAVED, author=facts.agent, stop=stop
            )
            async for saved in shown:
                yield await self._store(session, saved, telemetry)
        if (compaction := self.compaction) is not None and not stop.cancelled:
            call = AfterTurnCall.start(session.events, ctx.invocation_id)
            summary = compact(
                session.events,
                compaction,
                invocation_id=ctx.invocation_id,
                author=self.agent.name,
                gates=ctx.invocation,
                call=call,
            )
            name, model = self.agent.name, compaction.model_name
            shown = call.shown_if_slow(
                summary, EventType.COMPACTION, author=name, model=model, stop=stop
            )
            async for summarised in shown:
                yield await self._store(session, summarised, telemetry)

    async def _close_calls(
        self,
        session: Session,
        ctx: Context,
        calls: CallLedger,
        ending: Event,
        telemetry: TelemetryDispatcher,
    ) -> AsyncGenerator[Event]:
        """Store an error response for each call the turn leaves open as ``ending`` (a
        terminal error) ends it, so every call in the record has exactly one response."""
        error = ending.error
        if error is None or not calls.is_open:
            return
        if error.code != CANCELLED:
            why = f"the run failed ({error.code})"
        elif error.message.startswith(CANCELLED):  # "cancelled by request"
            why = f"the run was {error.message}"
        else:
            why = f"the run was cancelled ({error.message})"
        closing = calls.closing_events(
            session.id,
            started=f"{ledger.CANCELLED}: {why} while this call ran; it may or may not have "
            "taken effect.",
            not_run=f"{ledger.NOT_RUN}: {why} before this call ran; it did not run.",
            ran=ctx.invocation.started_calls,
        )
        for event in closing:
            stored = await self._store(session, event, telemetry)
            calls.observe(stored)
            yield stored

    async def _produce(self, ctx: Context, channel: Channel) -> None:
        """Runs the agent tree. Failures are sent as one terminal error event; a
        cancellation leaves the task cancelled, and the consumer records it."""
        resume = ctx.invocation.resume
        if resume is not None and resume.skips(self.agent.name, self.agent.name):
            return  # the interrupted turn had finished: nothing is left to do
        deadline = ctx.invocation.deadline = asyncio.timeout(ctx.run_config.max_wall_time_s)
        stop_clock_while_held(deadline, ctx.invocation.pause_gate)
        try:
            async with deadline, contextlib.aclosing(self.agent.astream(ctx)) as events:
                async for event in events:
                    if event.partial:  # never stored: nothing to wait for
                        channel.post(event)
                    else:
                        await channel.send(event)
        except TimeoutError as exc:
            failure: Exception = exc
            if deadline.expired():
                limit = ctx.run_config.max_wall_time_s
                failure = LimitExceededError(
                    "max_wall_time_s", f"wall time limit of {limit}s reached"
                )
            await channel.send(self._failure_event(ctx, failure))
        except RunParked as parked:
            waits = TextPart(text=f"waits on a person's decision: {', '.join(parked.calls)}")
            await channel.send(
                Event(
                    type=EventType.RUN_PARKED,
                    invocation_id=ctx.invocation_id,
                    session_id=ctx.session_id,
                    author=self.agent.name,
                    branch=self.agent.name,
                    parts=[waits],
                )
            )
        except Exception as exc:
            await channel.send(self._failure_event(ctx, exc))
        finally:  # at once: the task's done callback would cost the runner a loop trip
            channel.close()

    def _failure_event(self, ctx: Context, exc: Exception) -> Event:
        if isinstance(exc, AgentsCoreError):
            return self._error_event(ctx, exc.code, exc.message, exc)
        logger.error("agent %r crashed", self.agent.name, exc_info=exc)
        return self._error_event(ctx, "internal_error", f"{type(exc).__name__}: {exc}")

    def _error_event(
        self, ctx: Context, code: str, why: str, exc: Exception | None = None
    ) -> Event:
        """A terminal error event, authored by the root agent, that closes the invocation
        (the limit ``exc`` reached, or the span of its model call that failed for good)."""
        limit = exc.limit if isinstance(exc, LimitExceededError) else None
        attempts, call = failed_call(exc)
        return Event(
            type=EventType.ERROR,
            invocation_id=ctx.invocation_id,
            session_id=ctx.session_id,
            author=self.agent.name,
            branch=self.agent.name,
            error=ErrorInfo(code=code, message=why, limit=limit, attempts=attempts),
            **call,
        )


@dataclass(frozen=True, slots=True)
class _Controls:
    """How a turn is stopped or paused from outside."""

    cancel_token: CancellationToken
    pause_gate: PauseGate


def _failed(session: Session, invocation_id: str) -> bool:
    """Whether the invocation's last stored event is a terminal error."""
    last = session.events[-1] if session.events else None
    return last is not None and last.invocation_id == invocation_id and last.is_terminal_error


def _stored_user_message(session: Session, event: Event) -> Event:
    """``event``, checked to be a stored user message of ``session``."""
    if event.type is not EventType.USER_MESSAGE or event.seq is None:
        raise SessionError("a turn resumes only from a stored user_message event")
    if event.session_id != session.id:
        raise SessionError(f"the user message belongs to session {event.session_id!r}")
    return event
