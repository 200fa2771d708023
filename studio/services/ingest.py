"""OTLP trace ingest, the use case: spans an agent built elsewhere sent to ``POST
/v1/traces`` (``studio.web.otlp``) become sessions and runs of the token's owner, drawn in
the timeline and the waterfall like Studio's own, and published to the session's viewers
as they arrive.

One trace of one owner is one run, in a session of its own, of an external agent named
by the spans (``gen_ai.agent.name``, else ``service.name``): read-only, as it has no
agent version Studio could run. Spans of the trace in later requests append to that run;
a span sent twice is stored once. The run ends, through ``runs.records.end_run`` like
any other, when the trace's root span (one without a parent) arrives: failed when that
span failed. A trace whose root never arrives stays running. Spans that come after the
root (another service's exporter sends its spans of the trace on its own schedule) join
the ended run: its wall time, kept spans, costs and days are written again with them.
A model call is priced as its owner's model configs of the model it names price it, else
as Studio's price table does (``agents.prices.prices_of_models``), else unknown.

A request is stored in one transaction: all of its spans or, when anything fails, none.
Spans that cannot be stored (bad ids or times) are rejected and counted, the others
stored (OTLP's partial success). The trace id is looked up among the owner's traces
only, so one user's token never writes into another user's runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F

from agents_core import events as core_events
from studio import costs, event_rows, live
from studio.agents.prices import prices_of_models
from studio.ingest import events as ingest_events
from studio.ingest.genai import GenAiSpan, attributes_of, read_span, refusal
from studio.models import (
    ExternalAgent,
    IngestedTrace,
    Run,
    RunStatus,
    Session,
    SessionStatus,
)
from studio.runs import figures, records
from studio.services.sessions import session_status

EXTERNAL_ERROR = "external_error"


@dataclass(slots=True)
class Ingested:
    """What a request stored: spans rejected (and the first reason), and the events
    stored in each session, to publish once committed."""

    rejected: int = 0
    reason: str = ""
    stored: dict[uuid.UUID, list[core_events.Event]] = field(default_factory=dict)


def read_request(request: Any) -> tuple[dict[str, list[GenAiSpan]], int, str]:
    """The spans of an ``ExportTraceServiceRequest``, grouped by trace id, and the count
    of those rejected, with the first reason."""
    traces: dict[str, list[GenAiSpan]] = {}
    rejected, reason = 0, ""
    for resource_spans in request.resource_spans:
        resource = attributes_of(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                why = refusal(span)
                if why is not None:
                    rejected, reason = rejected + 1, reason or why
                    continue
                read = read_span(span, resource)
                traces.setdefault(read.trace_id, []).append(read)
    return traces, rejected, reason


def ingest(owner_id: int, request: Any) -> Ingested:
    """Store the spans of ``request`` for user ``owner_id``, in one transaction."""
    traces, rejected, reason = read_request(request)
    done = Ingested(rejected=rejected, reason=reason)
    models = {s.model for spans in traces.values() for s in spans if s.kind == "model"}
    with transaction.atomic():
        prices = prices_of_models(owner_id, models)
        for trace_id, spans in traces.items():
            session_pk, stored = _ingest_trace(owner_id, trace_id, spans, prices)
            if stored:
                done.stored.setdefault(session_pk, []).extend(stored)
    return done


async def publish(done: Ingested) -> None:
    """Send what ``ingest`` stored to each session's viewers, then its status."""
    for session_pk, stored in done.stored.items():
        status = await session_status(session_pk)
        await live.publish(session_pk, [(e, (e.seq or 1) - 1) for e in stored], status)


def _ingest_trace(
    owner_id: int, trace_id: str, spans: list[GenAiSpan], prices: Mapping[str, costs.Price]
) -> tuple[uuid.UUID, list[core_events.Event]]:
    trace, created = _trace_for(owner_id, trace_id, spans)
    ended = bool(trace.root_span_id)  # the run ended with its root, in an earlier request
    seen = set(trace.span_ids)
    fresh = _unseen(spans, seen)
    if fresh and (earliest := min(s.start for s in fresh)) < (trace.run.started_at or earliest):
        _start_at(trace.run, earliest)  # a parent sent after its children began before them
    key, invocation = trace.session.key, trace.run.invocation_id
    opened = set(trace.placeholder_ids)
    placeholders = _placeholders(fresh, seen | opened)
    asked, answered = set(trace.asked_call_ids), set(trace.answered_call_ids)
    events = ingest_events.events_of(
        fresh,
        session_key=key,
        invocation_id=invocation,
        placeholders=placeholders,
        opened=opened,
        asked=asked,
        answered=answered,
    )
    events = [costs.priced(event, {}, model_prices=prices) for event in events]
    _note_calls(trace, fresh, asked, answered)
    if created:
        events = _opening(fresh, key, invocation) + events
    trace.placeholder_ids = [*trace.placeholder_ids, *placeholders]
    stored = list(event_rows.insert_batch([(key, e) for e in events])) if events else []
    trace.span_ids = [*trace.span_ids, *(s.span_id for s in fresh)]
    root = next((s for s in fresh if s.parent_span_id is None), None)
    if root is not None and not trace.root_span_id:
        trace.root_span_id = root.span_id
        _name_after_root(trace, root)
    trace.save(
        update_fields=[
            "span_ids",
            "placeholder_ids",
            "root_span_id",
            "agent",
            "asked_call_ids",
            "answered_call_ids",
        ]
    )
    _count_tokens(trace.run, fresh)
    if root is not None and not ended:
        stored += _end(trace.run, root)
    elif ended and events:  # another service's spans, sent after the root
        figures.refigure_ended(trace.run_id)
    return trace.session_id, [e for e in stored if isinstance(e, core_events.Event)]


def _note_calls(
    trace: IngestedTrace, fresh: list[GenAiSpan], asked: set[str], answered: set[str]
) -> None:
    """Keep the tool calls ``fresh`` asked for and answered, for the trace's later spans
    (``IngestedTrace.asked_call_ids``, ``answered_call_ids``)."""
    tools = {s.tool_call_id for s in fresh if s.kind == "tool"} - answered
    calls = {c.call_id for s in fresh if s.kind == "model" for c in s.tool_calls if c.call_id}
    trace.asked_call_ids = [*trace.asked_call_ids, *sorted(calls - tools - answered - asked)]
    trace.answered_call_ids = [*trace.answered_call_ids, *sorted(tools)]


def _placeholders(fresh: list[GenAiSpan], known: set[str]) -> dict[str, GenAiSpan]:
    """The parents of ``fresh`` spans that are not known yet, each with its first child:
    an agent span is opened for each, so its children draw under it until it comes."""
    arrived = {s.span_id for s in fresh}
    found: dict[str, GenAiSpan] = {}
    for span in sorted(fresh, key=lambda s: s.start):
        parent = span.parent_span_id
        if parent and parent not in known and parent not in arrived:
            found.setdefault(parent, span)
    return found


def _name_after_root(trace: IngestedTrace, root: GenAiSpan) -> None:
    """The root span names the trace's agent best, and a session titled after its agent
    (no user's words came first): spans that came before it may have had only the
    service's name."""
    name = root.agent[:200]
    if name != trace.agent.name:
        trace.agent = _external_agent(trace.owner_id, name)
    if not trace.run.message:
        title = f"{name} · {root.name}"[:200]
        Session.objects.filter(pk=trace.session_id).update(title=title)


def _unseen(spans: Iterable[GenAiSpan], seen: set[str]) -> list[GenAiSpan]:
    fresh: list[GenAiSpan] = []
    for span in spans:
        if span.span_id not in seen:
            seen.add(span.span_id)
            fresh.append(span)
    return fresh


def _trace_for(owner_id: int, trace_id: str, spans: list[GenAiSpan]) -> tuple[IngestedTrace, bool]:
    """The owner's trace ``trace_id`` (its row locked), or a new one with its session
    and running run. Two requests making the same new trace at once: the second to
    commit meets the unique constraint, and appends to the first's."""
    found = _locked(owner_id, trace_id)
    if found is not None:
        return found, False
    try:
        with transaction.atomic():  # a savepoint: a lost race undoes only this
            return _new_trace(owner_id, trace_id, spans), True
    except IntegrityError:
        return _locked(owner_id, trace_id) or _no_trace(trace_id), False


def _locked(owner_id: int, trace_id: str) -> IngestedTrace | None:
    return (
        IngestedTrace.objects.select_for_update()
        .select_related("session", "run")
        .filter(owner_id=owner_id, trace_id=trace_id)
        .first()
    )


def _no_trace(trace_id: str) -> IngestedTrace:
    raise IntegrityError(f"trace {trace_id} could be neither made nor found")


def _new_trace(owner_id: int, trace_id: str, spans: list[GenAiSpan]) -> IngestedTrace:
    first = min(spans, key=lambda s: s.start)
    agent_name = _agent_name(spans)
    agent = _external_agent(owner_id, agent_name)
    asked = _first_input(spans)
    # Titled as Studio's own sessions are, by what the user asked; else after its agent.
    title = (asked or f"{agent_name} · {first.name}")[:200]
    session = Session.objects.create(owner_id=owner_id, title=title, status=SessionStatus.RUNNING)
    run = Run.objects.create(
        session=session,
        invocation_id=trace_id,
        message=asked[:10_000],
        status=RunStatus.RUNNING,
        start_seq=0,
    )
    _start_at(run, first.start)  # created_at too, which create() sets to now
    return IngestedTrace.objects.create(
        owner_id=owner_id, trace_id=trace_id, agent=agent, session=session, run=run
    )


def _start_at(run: Run, start: datetime) -> None:
    """The run began with its trace's earliest span, however late the spans were sent:
    an external run is never queued, so it was made when it started (its wall time,
    duration and latency then read as the trace's own)."""
    Run.objects.filter(pk=run.pk).update(created_at=start, started_at=start)
    run.created_at = run.started_at = start


def _external_agent(owner_id: int, name: str) -> ExternalAgent:
    found = ExternalAgent.objects.filter(owner_id=owner_id, name=name).first()
    if found is not None:
        return found
    try:
        with transaction.atomic():  # a concurrent request may make it first
            return ExternalAgent.objects.create(owner_id=owner_id, name=name)
    except IntegrityError:
        return ExternalAgent.objects.get(owner_id=owner_id, name=name)


def _agent_name(spans: list[GenAiSpan]) -> str:
    roots = [s for s in spans if s.parent_span_id is None]
    named = [s for s in roots + spans if "gen_ai.agent.name" in s.attributes]
    pick = named[0] if named else (roots[0] if roots else spans[0])
    return pick.agent[:200]


def _first_input(spans: list[GenAiSpan]) -> str:
    asked = sorted((s for s in spans if s.input_text), key=lambda s: s.start)
    return asked[0].input_text if asked else ""


def _opening(spans: list[GenAiSpan], key: str, invocation: str) -> list[core_events.Event]:
    text = _first_input(spans)
    if not text:
        return []
    first = min(spans, key=lambda s: s.start)
    return [ingest_events.user_message(first, session_key=key, invocation_id=invocation, text=text)]


def _count_tokens(run: Run, spans: list[GenAiSpan]) -> None:
    models = [s for s in spans if s.kind == "model"]
    added_in = sum(s.input_tokens or 0 for s in models)
    added_out = sum(s.output_tokens or 0 for s in models)
    if added_in or added_out:
        Run.objects.filter(pk=run.pk).update(
            input_tokens=F("input_tokens") + added_in, output_tokens=F("output_tokens") + added_out
        )


def _end(run: Run, root: GenAiSpan) -> list[core_events.Event]:
    """End the run with its root span (once: ``end_run`` ends a run only once)."""
    ending = (
        records.Ending(RunStatus.FAILED, EXTERNAL_ERROR, root.status or "the root span failed")
        if root.failed
        else records.Ending(RunStatus.SUCCEEDED)
    )
    Run.objects.filter(pk=run.pk, ended_at__isnull=True).update(ended_at=root.end)
    ended = records.end_run(run.pk, ending, terminal_event_stored=True)
    return list(ended.events) if ended is not None else []
