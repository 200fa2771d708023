"""Spans read from the database: a run's, or a session's runs' (``agents_core.spans``).

The events are read in their stored wire form, only the types that open or close spans,
in seq order; a run that has ended closes what it left open (as errors unless it
succeeded), so its spans are final; a live run's open spans stay open.

A final run's spans never change, and deriving them reads every event of the run (a
10,000-event run: about half a second): ``end_run`` stores them (``RunSpans``) and
``run_spans_json`` reads them from there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import TypeAdapter

from agents_core.spans import SPAN_EVENT_TYPES, Span, SpanTree
from studio.models import FINISHED_RUN_STATUSES, Event, Run, RunSpans, payload_texts

SPAN_TYPES = SPAN_EVENT_TYPES
"""The event types spans are made of."""
SPANS_JSON: TypeAdapter[list[Span]] = TypeAdapter(list[Span])


def run_spans(run: Run) -> list[Span]:
    """The spans of ``run`` (open ones too, while it is live)."""
    if run.start_seq is None:
        return []
    rows = _rows(run.session_id, after_seq=run.start_seq).filter(invocation_id=run.invocation_id)
    return _spans_of(run, _payloads(rows))


def run_spans_json(run: Run) -> bytes:
    """``run_spans`` as a JSON array: the spans' wire form, as the API sends them. An
    ended run's come from its stored ``RunSpans`` (written by ``keep_final_spans`` when
    it ended, or on first read for a run that ended before they were kept)."""
    if not _final(run):
        return SPANS_JSON.dump_json(run_spans(run))
    stored: str | None = (
        RunSpans.objects.filter(run_id=run.pk).values_list("spans", flat=True).first()
    )
    if stored is not None:
        return stored.encode()
    return keep_final_spans(run, run_spans(run))


def keep_final_spans(run: Run, spans: list[Span]) -> bytes:
    """Store ended ``run``'s final ``spans`` (the spans API reads them from then on)."""
    text = SPANS_JSON.dump_json(spans)
    # One INSERT ... ON CONFLICT: ``update_or_create`` took a locking read and two
    # savepoints around its insert.
    row = RunSpans(run_id=run.pk, spans=text.decode())
    RunSpans.objects.bulk_create(
        [row], update_conflicts=True, unique_fields=["run"], update_fields=["spans"]
    )
    return text


def session_spans(session_pk: uuid.UUID, runs: Iterable[Run]) -> list[Span]:
    """The spans of ``runs`` of one session, run after run."""
    by_invocation = {run.invocation_id: run for run in runs if run.invocation_id}
    if not by_invocation:
        return []
    rows = _rows(session_pk, after_seq=0).filter(invocation_id__in=list(by_invocation))
    grouped: dict[str, list[Mapping[str, Any]]] = {key: [] for key in by_invocation}
    for payload in _payloads(rows):
        grouped[payload["invocation_id"]].append(payload)
    return [span for key, run in by_invocation.items() for span in _spans_of(run, grouped[key])]


def _rows(session_pk: uuid.UUID, *, after_seq: int) -> Any:
    return Event.objects.filter(
        session_id=session_pk, seq__gt=after_seq, type__in=SPAN_TYPES
    ).order_by("seq")


def _payloads(rows: Any) -> Iterator[Mapping[str, Any]]:
    """The rows' payloads, read as text and decoded here: the ORM's per-row JSON field
    conversion costs more than the decoding itself."""
    for text in payload_texts(rows).iterator():
        yield json.loads(text)


def _spans_of(
    run: Run, payloads: Iterator[Mapping[str, Any]] | list[Mapping[str, Any]]
) -> list[Span]:
    tree = SpanTree().observe_all(payloads)
    if run.ended_at is not None and not run.is_active:
        failed = run.status not in FINISHED_RUN_STATUSES
        why = f"{run.error_code}: {run.error_message}" if failed else None
        tree.finish(run.ended_at, error=why)
    return tree.spans()


def _final(run: Run) -> bool:
    """Whether ``run``'s spans are final: it ended and its executor let go of it (an
    ended run its executor still holds may store more events)."""
    return run.ended_at is not None and not run.is_active and not run.owner_process
