"""Executing one run: the only caller of ``Runner``.

``execute_run`` claims a queued run for this process, connects the MCP servers its
agents name, builds its pinned agent version with the owner's models, runs the turn
(from the user message stored when the run was queued or, for a run resumed from an
interrupted one, from the session's record under the invocation id queued with it)
through ``DjangoSessionService`` (which stores each complete event, seq assigned,
before the runner yields it), renews the run's lease while it runs, and ends it
through ``records.end_run``, or lets go of it through ``parking.park`` when it parked
on a person (a woken run goes on from the record under its own invocation). A run that
stops on an unexpected error (its database went away mid-run, say) still ends with a
stored terminal ``internal_error`` event, the store retried while the database is away.

``published.execute_and_publish`` wraps it for the executors (``inline``, ``worker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import InterfaceError, OperationalError

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core import failures as core_failures
from agents_core.approvals import ApprovalBroker
from agents_core.context import CancellationToken
from agents_core.contracts import Usage
from agents_core.memory import MemoryConfig
from agents_core.pausing import PauseGate
from agents_core.runner import Runner
from studio import budgets
from studio.agents import llms, specs, versions
from studio.artifacts import DjangoArtifactService
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.files import StorageBlobStore
from studio.gates import rate_limits, response_cache
from studio.mcp import client as mcp
from studio.memory import DjangoMemoryService
from studio.models import DEFAULT_APP_NAME, Event, Run, RunStatus, Session
from studio.runs import parking, records, recovery, replays
from studio.runs.records import Ending
from studio.session_service import DjangoSessionService

logger = logging.getLogger("studio.runs")

DATABASE_GONE = (OperationalError, InterfaceError)
"""What the database raises while it is unreachable."""
END_RETRY_S = 60.0
"""How long a run keeps trying to record how it ended while the database is away."""

EventSink = Callable[[core_events.Event], Awaitable[None]]
RunSink = Callable[[Run], Awaitable[None]]


@dataclass(slots=True)
class _Turn:
    """What a claimed run needs to execute, and what it added up so far."""

    runner: Runner
    user_id: str
    session_key: str
    user_message: core_events.Event | str | None
    """``None`` for a resumed run: it goes on from its session's record."""
    invocation_id: str | None = None
    """A resumed run's invocation, recorded when it was queued."""
    usage: Usage = field(default_factory=Usage)
    error: core_events.ErrorInfo | None = None
    degradations: list[core_events.ErrorInfo] = field(default_factory=list)
    """Failures a ``degrade`` policy let the run go past: it ends ``degraded``."""
    parked: bool = False
    """The run stopped on a person (``run_parked``): it is not over."""
    models: versions.VersionModels | None = None
    """The models its agents were built with: its end names them on its calls."""


async def execute_run(
    run: Run,
    *,
    on_event: EventSink | None = None,
    on_claimed: RunSink | None = None,
    cancel_token: CancellationToken | None = None,
    approvals: ApprovalBroker | None = None,
    pause_gate: PauseGate | None = None,
    on_woken: Callable[[], object] | None = None,
) -> Run:
    """Run ``run`` (which must be queued) to its end, or until it parks on a person;
    every event, partial ones included, goes to ``on_event`` after it is stored.
    Returns the ended (or parked) run. ``on_woken``: it parked, and was queued again
    at once (decided meanwhile).

    The run is claimed first, and its lease held from then on, so it is nobody's only
    for a moment (``recovery``); then the MCP servers its agents name connect, staying
    connected for the whole run, and its agent is built."""
    token = cancel_token or CancellationToken()
    controls = _Controls(token, pause_gate or PauseGate())
    await db_sync_to_async(_claim)(run)
    lease = asyncio.create_task(_keep_lease(run, controls), name=f"lease-{run.pk}")
    turn: _Turn | None = None
    try:
        if on_claimed is not None:
            await on_claimed(run)
        servers = await db_sync_to_async(mcp.servers_for_run)(run)
        async with mcp.open_tools(servers) as mcp_tools:
            turn = await db_sync_to_async(_prepare)(run, mcp_tools, approvals)
            if turn is not None:
                await _stream(turn, controls, on_event)
    except asyncio.CancelledError:
        await db_sync_to_async(records.end_run)(run.pk, recovery.interrupted())
        raise
    except Exception as exc:
        await _end_on_error(run, turn.usage if turn else Usage(), exc, on_event)
        raise
    finally:
        lease.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lease
    if turn is not None and turn.parked:
        park = db_sync_to_async(parking.park)
        woken = await _retrying(f"park run {run.pk}", park, run.pk, turn.usage)
        if woken and on_woken is not None:
            on_woken()
    elif turn is not None:
        end = db_sync_to_async(records.end_run)
        ending = Ending.of(turn.error, turn.degradations)
        await _retrying(
            f"record how run {run.pk} ended",
            end,
            run.pk,
            ending,
            usage=turn.usage,
            terminal_event_stored=turn.error is not None,
            models=turn.models,
        )
    return await Run.objects.aget(pk=run.pk)


@dataclass(frozen=True, slots=True)
class _Controls:
    """How a run is stopped or paused while it executes."""

    cancel_token: CancellationToken
    pause_gate: PauseGate


async def _stream(turn: _Turn, controls: _Controls, on_event: EventSink | None) -> None:
    stream = turn.runner.astream(
        user_id=turn.user_id,
        session_id=turn.session_key,
        message=turn.user_message,
        invocation_id=turn.invocation_id,
        cancel_token=controls.cancel_token,
        pause_gate=controls.pause_gate,
    )
    async with contextlib.aclosing(stream) as events:
        async for event in events:
            if not event.partial:
                turn.usage = turn.usage + event.usage if event.usage else turn.usage
                turn.error = event.error if event.is_terminal_error else turn.error
                turn.degradations.extend(core_failures.degradations([event]))
                turn.parked = event.type is core_events.EventType.RUN_PARKED
            if on_event is not None:
                await on_event(event)


async def _keep_lease(run: Run, controls: _Controls) -> None:
    """Renew the run's lease while it executes; once the lease is lost (the run was
    cancelled or interrupted elsewhere), stop the run. A pause or resume asked through
    another server (whose executor does not hold this run) is followed from the record."""
    lease_s = settings.STUDIO_RUN_LEASE_S
    while True:
        await asyncio.sleep(lease_s / 3)
        try:
            status = await db_sync_to_async(records.renew_lease)(
                run, owner=records.PROCESS_ID, lease_s=lease_s
            )
        except Exception:  # a database hiccup: the lease has two more chances
            logger.warning("could not renew the lease of run %s", run.pk, exc_info=True)
            continue
        if status is None:
            controls.cancel_token.cancel("the run was stopped elsewhere")
            return
        if status in (RunStatus.PAUSED, RunStatus.RUNNING):
            hold(run, controls.pause_gate, paused=status == RunStatus.PAUSED)


async def _end_on_error(run: Run, usage: Usage, exc: Exception, on_event: EventSink | None) -> None:
    """End ``run``, which stopped on ``exc`` (the database went away, say), with a stored
    terminal error event that viewers get, retrying while the database is away. Should
    it stay away past ``END_RETRY_S``, the lease sweep ends the run instead."""
    message = f"the run stopped on an internal error ({type(exc).__name__})"
    ending = Ending(RunStatus.FAILED, records.INTERNAL_ERROR, message)
    end = db_sync_to_async(records.end_run)
    try:
        ended = await _retrying(f"end run {run.pk}", end, run.pk, ending, usage=usage)
    except DATABASE_GONE:
        logger.error("run %s: the database stayed away; the lease sweep will end it", run.pk)
        return
    if ended is None or on_event is None:
        return
    for stored in ended.events:
        try:
            await on_event(stored)
        except Exception:  # the sink itself may be what failed; the event is stored
            logger.warning("run %s: could not pass on its error event", run.pk, exc_info=True)


async def _retrying[**P, R](
    what: str, call: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
) -> R:
    """``call``, tried again with growing pauses while the database is unreachable, for
    at most ``END_RETRY_S``; then its error propagates."""
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + END_RETRY_S
    pause = 0.05
    while True:
        try:
            return await call(*args, **kwargs)
        except DATABASE_GONE:
            if loop.time() + pause > give_up_at:
                raise
            logger.warning("could not %s; trying again in %.2fs", what, pause, exc_info=True)
        await asyncio.sleep(pause)
        pause = min(pause * 2, 1.0)


def hold(run: Run, gate: PauseGate, *, paused: bool) -> None:
    """Hold ``run`` at its next step (``paused``) or let it go on, and say so on the
    executing process's copy of its record, which its viewers are told."""
    if paused == gate.paused:
        return
    if paused:
        gate.pause()
    else:
        gate.resume()
    if run.is_active:
        run.status = RunStatus.PAUSED if paused else RunStatus.RUNNING


def _claim(run: Run) -> None:
    """Claim queued ``run`` for this process (``ConflictError`` when it is not queued)."""
    version_id = Session.objects.filter(pk=run.session_id).values_list(
        "agent_version_id", flat=True
    )
    if version_id.first() is None:
        raise ConflictError(f"run {run.pk} has no agent to run", code="run_not_queued")
    lease_s = settings.STUDIO_RUN_LEASE_S
    if not records.claim_run(run, owner=records.PROCESS_ID, lease_s=lease_s):
        status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        raise ConflictError(f"run {run.pk} is {status}, not queued", code="run_not_queued")


def _prepare(
    run: Run, mcp_tools: mcp.OpenedTools, approvals: ApprovalBroker | None
) -> _Turn | None:
    """Build claimed ``run``'s agent; a version that no longer builds ends the run
    failed, with an error event, and ``None`` is returned."""
    session = Session.objects.select_related("owner", "agent_version__agent").get(pk=run.session_id)
    version = session.agent_version
    try:
        if version is None:
            raise core_exceptions.SpecError("the session's agent version was deleted")
        models = versions.version_models(version)
        built = specs.build(version, mcp_tools=mcp.connected_tools(mcp_tools), models=models)
        make_runner = replays.runner_type(run, version, mcp.connected_tools(mcp_tools))
    except core_exceptions.AgentsCoreError as exc:
        records.end_run(run.pk, Ending(RunStatus.FAILED, exc.code, str(exc)))
        return None
    prices, configs = models.agent_prices, models.configs
    runner = make_runner(
        built.agent,
        # Prices as they are when the run starts: each call's cost is kept as stored.
        session_service=DjangoSessionService(prices, models.summary_price, models.config_prices),
        app_name=DEFAULT_APP_NAME,
        run_config=built.run_config,
        approvals=approvals,
        compaction=built.compaction,
        spend_guard=budgets.guard_for(version, session.owner, prices, run.pk),
        rate_limiter=rate_limits.limiter_for(configs),
        response_cache=response_cache.DatabaseResponseCache(configs),
        blobs=StorageBlobStore(),
        memory=MemoryConfig(DjangoMemoryService(session.owner_id), built.key_facts),
        artifacts=DjangoArtifactService(session.owner_id),
    )
    user_id = session.owner.get_username()
    woken = parking.parked_before(run)  # one query: a fresh run's turn starts here
    if run.resumed_from_id is not None or woken:
        played = parking.answers_this_turn(run)
        for agent in built.agent.walk():  # models that play a script go on in it
            if (model := getattr(agent, "model", None)) is not None:
                llms.skip_played(model, played.get(agent.name, 0))
    if woken:  # it goes on from the record, as decided
        for decision in parking.decisions(run):
            runner.approvals.deliver(decision, session_id=session.key)
        so_far = Usage(input_tokens=run.input_tokens, output_tokens=run.output_tokens)
        return _Turn(
            runner,
            user_id,
            session.key,
            None,
            invocation_id=run.invocation_id,
            usage=so_far,
            models=models,
        )
    if run.resumed_from_id is not None:  # no message: the runner resumes from the record
        resumed = run.invocation_id
        return _Turn(runner, user_id, session.key, None, invocation_id=resumed, models=models)
    return _Turn(runner, user_id, session.key, _user_message(run, session), models=models)


def _user_message(run: Run, session: Session) -> core_events.Event | str:
    """The run's user message, stored when it was queued; its text for a run queued
    before messages were stored with their runs."""
    return stored_user_message(run) or run.message


def stored_user_message(run: Run) -> core_events.Event | None:
    """The user message stored with ``run`` when it was queued (``records.queue_run``)."""
    row = Event.objects.filter(
        session_id=run.session_id,
        seq=(run.start_seq or 0) + 1,
        type=core_events.EventType.USER_MESSAGE,
    ).first()
    return None if row is None else row.to_core()
