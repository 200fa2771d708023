"""A realistic history, made fast: users, agents, sessions, runs and their events, for
benchmarks and load tests at the size of a busy deployment (``generate_history``).

Events are written in their wire form exactly as the runner stores them
(``history_turns``), in bulk. Runs carry what ``end_run`` records for a real one: their
status and error, tokens, ``start_seq``, the wall-time split and their final spans
(``RunSpans``); sessions their last seq, status and last change. Everything but the
users' and agents' ids is deterministic for a given ``seed``.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction

from agents_core.contracts import Cost
from agents_core.spans import SpanTree
from studio import costs, services
from studio.agents import specs, versions
from studio.agents.demo import DEMO_AGENTS, MODELS
from studio.management.copy_rows import copy_rows
from studio.management.history_turns import ENDING_ERRORS, Turn, new_id, play, question
from studio.models import (
    FINISHED_RUN_STATUSES,
    Agent,
    AgentVersion,
    Event,
    ModelConfig,
    Run,
    RunSpans,
    RunStatus,
    Session,
)
from studio.rollups import days
from studio.traces.reads import SPANS_JSON
from studio.traces.timing import wall_time

BATCH = 5_000
START = datetime(2026, 6, 1, tzinfo=UTC)
ENDINGS = (
    (RunStatus.SUCCEEDED, 0.86),
    (RunStatus.FAILED, 0.07),
    (RunStatus.CANCELLED, 0.04),
    (RunStatus.INTERRUPTED, 0.03),
)
EVENTS_PER_ROUND = 2.1
"""A tool round's events: the model's call and the tool's response, and a 5% chance of
an approval's request and decision."""


@dataclass(frozen=True, slots=True)
class Plan:
    users: int = 20
    sessions: int = 10_000
    events: int = 1_000_000
    """About how many events in all (sessions draw their length at random)."""
    big_sessions: int = 1
    """Sessions of one run of about ``big_events`` events (for the timeline and the
    waterfall at their largest)."""
    big_events: int = 10_000
    seed: int = 1

    def problems(self) -> list[str]:
        """What makes this plan impossible, in words (empty when it is fine)."""
        found = [
            f"{name} must be at least 1 (got {value})"
            for name, value in (("users", self.users), ("sessions", self.sessions))
            if value < 1
        ]
        if self.big_sessions < 0 or self.big_sessions > self.sessions:
            found.append(f"big sessions must be between 0 and sessions (got {self.big_sessions})")
        if self.big_sessions and self.big_events < 6:
            found.append(f"big events must be at least 6 (got {self.big_events})")
        if self.events < self.big_sessions * self.big_events:
            found.append("events must be at least big sessions x big events")
        return found


@dataclass(slots=True)
class Written:
    users: int = 0
    agents: int = 0
    sessions: int = 0
    runs: int = 0
    events: int = 0


@dataclass(slots=True)
class _Batch:
    """Rows waiting for their bulk insert: sessions, events, runs and the runs' spans."""

    sessions: list[Session] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    spans: list[RunSpans] = field(default_factory=list)


def generate(plan: Plan, log: Callable[[str], Any] = print) -> Written:
    """Write ``plan``'s history into the database; returns what was written."""
    rng = random.Random(plan.seed)  # noqa: S311  (made-up data, repeatable by seed)
    _calls.cache_clear()
    written = Written()
    owners = [_owner(n, written) for n in range(plan.users)]
    budget = plan.events - plan.big_sessions * plan.big_events
    per_session = max(6, budget // max(1, plan.sessions - plan.big_sessions))
    batch = _Batch()
    for index in range(plan.sessions):
        big = index < plan.big_sessions
        owner, versions = owners[index % len(owners)]
        target = plan.big_events if big else max(6, int(rng.expovariate(1 / per_session)))
        _session(owner, rng.choice(versions), target, big, rng, batch, index)
        if len(batch.events) >= BATCH:
            _flush(batch, written)
        if index and index % 1_000 == 0:
            log(f"{index} sessions, {written.events + len(batch.events)} events")
    _flush(batch, written)
    days.rebuild(owner.pk for owner, _ in owners)
    _analyze()
    return written


def _analyze() -> None:
    """On PostgreSQL, the planner's statistics of what was just loaded, as a bulk load
    should end: autovacuum gets to it only later, and until then the planner takes the
    tables for nearly empty (the overview of a 92-day range after 1,025,831 events: a
    nested loop over 144,892 runs it counted as 240, 571 ms; 158 ms once analysed). A
    live deployment's tables grow slowly and are analysed as they go. SQLite is left
    as a deployment has it: nothing analyses it (no ``sqlite_stat1``)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def _owner(n: int, written: Written) -> tuple[Any, list[AgentVersion]]:
    """History user ``n`` with the demo account's models and agents."""
    user, created = get_user_model().objects.get_or_create(username=f"history_user_{n}")
    written.users += created
    for name, options in MODELS.items():
        if not ModelConfig.objects.filter(owner=user, name=name).exists():
            # As the demo account's: the scripted models' made-up price from the table.
            services.create_model_config(
                user.pk, name=name, provider=ModelConfig.Provider.SCRIPTED, options=options
            )
    versions = []
    for name, description, spec in DEMO_AGENTS:
        agent = Agent.objects.filter(owner=user, name=name).first()
        if agent is None:
            agent = services.create_agent(user, name=name, description=description, spec=spec)
            written.agents += 1
        assert agent.current_version is not None  # noqa: S101  (agents are made with one)
        versions.append(agent.current_version)
    return user, versions


def _session(
    owner: Any,
    version: AgentVersion,
    target: int,
    big: bool,
    rng: random.Random,
    batch: _Batch,
    index: int,
) -> None:
    """A session of about ``target`` events, its runs and events added to ``batch``; a
    big one is a single successful run."""
    created = START + timedelta(seconds=index * 157 + rng.randint(0, 120))
    session = Session(
        id=new_id(rng),
        owner=owner,
        agent_version=version,
        title=f"{question(rng)} (#{index})",
        created_at=created,
    )
    session.key = str(session.id)
    seq, clock, status, author = 0, created, RunStatus.SUCCEEDED, specs.root_agent_name(version)
    model, price = _calls(version, author)
    while seq < target:
        turn = Turn(session, new_id(rng).hex, seq, clock, author, rng, model, price)
        status = RunStatus.SUCCEEDED if big else _ending(rng)
        rounds = int((target - 6) / EVENTS_PER_ROUND) if big else rng.randint(0, 3)
        play(turn, status, tool_rounds=rounds)
        _run(turn, status, seq, batch)
        seq, clock = turn.seq, turn.clock + timedelta(minutes=rng.randint(1, 30))
        if big:
            break
    session.last_seq, session.status = seq, status
    session.updated_at = batch.runs[-1].ended_at or clock
    batch.sessions.append(session)


@functools.cache
def _calls(version: AgentVersion, author: str) -> tuple[str, costs.Price | None]:
    """The model ``author`` calls in ``version`` and its price (looked up once each). A
    generated run's calls are all its root's: a workflow root, which calls no model,
    has its first model-calling agent's."""
    read = versions.version_models(version)
    models, prices = read.agent_models, read.agent_prices
    caller = author if author in models else next(iter(models), "")
    return models.get(caller, ""), prices.get(caller)


def _ending(rng: random.Random) -> RunStatus:
    return rng.choices([s for s, _ in ENDINGS], [w for _, w in ENDINGS])[0]


def _run(turn: Turn, status: RunStatus, start_seq: int, batch: _Batch) -> None:
    """The run of ``turn``, as ``end_run`` records it, with its final spans."""
    first = turn.events[0].created_at
    started = first + timedelta(milliseconds=turn.rng.randint(5, 200))
    code, message = ENDING_ERRORS.get(status, ("", ""))
    spans = SpanTree().observe_all(e.payload for e in turn.events)
    failed = status not in FINISHED_RUN_STATUSES
    spans.finish(turn.clock, error=f"{code}: {message}" if failed else None)
    final = spans.spans()
    calls = [event for event in turn.events if event.usage is not None]
    spent = costs.total(
        None if e.cost is None else Cost(amount=e.cost, currency=e.cost_currency) for e in calls
    )
    run = Run(
        id=new_id(turn.rng),
        session=turn.session,
        invocation_id=turn.invocation_id,
        message=turn.events[0].text,
        status=status,
        created_at=first,
        started_at=started,
        ended_at=turn.clock,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        error_code=code,
        error_message=message,
        timing=wall_time(first, started, turn.clock, final),
        start_seq=start_seq,
        cost=spent.amount,
        cost_currency=spent.currency,
        cost_complete=spent.complete,
    )
    for call in calls:  # attributed as end_run does: to the run (and the model, above)
        call.run = run
    batch.events.extend(turn.events)
    batch.runs.append(run)
    batch.spans.append(RunSpans(run=run, spans=SPANS_JSON.dump_json(final).decode()))


@contextmanager
def _given_creation_times(model: Any) -> Iterator[None]:
    """Let ``bulk_create`` keep the ``created_at`` a history gives (auto_now_add would
    stamp every row with today)."""
    created_at = model._meta.get_field("created_at")
    created_at.auto_now_add = False
    try:
        yield
    finally:
        created_at.auto_now_add = True


def _flush(batch: _Batch, written: Written) -> None:
    """Insert the batch's rows, in one transaction."""
    with transaction.atomic(), _given_creation_times(Run):
        copy_rows(Session, batch.sessions)
        copy_rows(Run, batch.runs)
        copy_rows(RunSpans, batch.spans)
        copy_rows(Event, batch.events)
    written.sessions += len(batch.sessions)
    written.runs += len(batch.runs)
    written.events += len(batch.events)
    batch.sessions.clear()
    batch.events.clear()
    batch.runs.clear()
    batch.spans.clear()
