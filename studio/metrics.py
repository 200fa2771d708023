"""Prometheus metrics, served at ``GET /metrics`` to staff or the operator's scraper
(``studio.web.metrics``).

Two kinds, on one registry:

- Read from the database at each scrape (``StoredRuns``), so every server reports the
  same deployment-wide figures whoever executed the runs (servers or workers): runs
  started and ended by status, their durations, the queue depth, the runs parked on a
  person or a pause, and the events stored so far (its rate is events persisted per
  second). One aggregate query each, over indexed columns or the sessions table.
- Counted in this process, as things happen here: live viewers connected to this
  server, events this process stored, model and tool call durations it persisted, the
  model calls' failed attempts (retried, or failed for good), live
  messages the channel layer refused (viewers fill such gaps from the database), and
  sign-in attempts it refused for the rate limit.
  Workers serve no HTTP: their own counts are not scraped; the stored figures are.

``prometheus-client`` renders the exposition format; the figures are ours.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta

from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from agents_core import events as core_events
from studio.models import ACTIVE_RUN_STATUSES, Run, RunStatus, Session, SessionStatus

REGISTRY = CollectorRegistry(auto_describe=False)
RUN_SECONDS_BUCKETS = (0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600)
CALL_SECONDS_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

LIVE_VIEWERS = Gauge(
    "studio_live_viewers", "Websocket viewers connected to this server.", registry=REGISTRY
)
EVENTS_PERSISTED = Counter(
    "studio_events_persisted", "Events this process stored.", registry=REGISTRY
)
CALL_SECONDS = Histogram(
    "studio_call_duration_seconds",
    "Model and tool calls this process stored, by kind: how long each took.",
    ["kind"],
    buckets=CALL_SECONDS_BUCKETS,
    registry=REGISTRY,
)
CHANNEL_DROPS = Counter(
    "studio_channel_layer_drops",
    "Live messages the channel layer refused on this server (viewers resync from the database).",
    registry=REGISTRY,
)
SIGN_INS_REFUSED = Counter(
    "studio_sign_ins_refused",
    "Sign-in attempts this server refused for the rate limit (the sign-in pages and the "
    "token exchange): a rise is someone guessing passwords.",
    registry=REGISTRY,
)
MODEL_FAILURES = Counter(
    "studio_model_failures",
    "Failed model call attempts this process stored, by error code and what followed: "
    "retried (the call went again) or failed (for good; a call its open breaker refused "
    "too). A rise is a model provider in trouble.",
    ["code", "then"],
    registry=REGISTRY,
)
_CALL_KINDS = {
    core_events.EventType.AGENT_MESSAGE: "model",
    core_events.EventType.TOOL_RESPONSE: "tool",
}


def stored(event: core_events.Event) -> None:
    """Count an event this process just stored, and the call it closes."""
    stored_many((event,))


def stored_many(events: Sequence[core_events.Event]) -> None:
    """``stored`` for each of ``events`` (a group commit's), counted at once."""
    EVENTS_PERSISTED.inc(len(events))
    for event in events:
        kind = _CALL_KINDS.get(event.type)
        if kind is not None and event.latency_ms is not None:
            CALL_SECONDS.labels(kind).observe(event.latency_ms / 1000)
        elif (error := event.error) is not None and error.attempts is not None:
            retried = event.type is core_events.EventType.MODEL_RETRY
            MODEL_FAILURES.labels(error.code, "retried" if retried else "failed").inc()


class StoredRuns(Collector):
    """The deployment's runs and events as the database holds them, read per scrape."""

    def collect(self) -> Iterator[Metric]:
        counted = Run.objects.order_by().values("status").annotate(n=Count("pk"))
        by_status = {row["status"]: row["n"] for row in counted}
        started = CounterMetricFamily(
            "studio_runs_started", "Runs that started executing.", labels=()
        )
        started.add_metric((), Run.objects.filter(started_at__isnull=False).count())
        yield started
        ended = CounterMetricFamily(
            "studio_runs_ended", "Runs that ended, by status.", labels=["status"]
        )
        for status in RunStatus:
            if status not in ACTIVE_RUN_STATUSES:
                ended.add_metric([status.value], by_status.get(status.value, 0))
        yield ended
        queue = GaugeMetricFamily("studio_run_queue_depth", "Runs queued, not yet claimed.")
        queue.add_metric((), by_status.get(RunStatus.QUEUED.value, 0))
        yield queue
        yield _parked()
        yield _run_durations()
        events = CounterMetricFamily("studio_events_stored", "Events stored in every session.")
        events.add_metric((), Session.objects.aggregate(n=Sum("last_seq"))["n"] or 0)
        yield events


def _parked() -> GaugeMetricFamily:
    """Runs held on a person (an approval or a question) or by a pause."""
    parked = GaugeMetricFamily(
        "studio_parked_runs", "Runs waiting on a person or paused.", labels=["why"]
    )
    waiting = Session.objects.filter(status=SessionStatus.WAITING).count()
    paused = Run.objects.filter(status=RunStatus.PAUSED).count()
    parked.add_metric(["person"], waiting)
    parked.add_metric(["paused"], paused)
    return parked


def _run_durations() -> HistogramMetricFamily:
    """Ended runs by how long they ran, from start to end (cumulative buckets)."""
    took = ExpressionWrapper(F("ended_at") - F("started_at"), output_field=DurationField())
    ended = Run.objects.filter(ended_at__isnull=False, started_at__isnull=False)
    ended = ended.annotate(took=took)
    limits = {f"le_{i}": timedelta(seconds=bound) for i, bound in enumerate(RUN_SECONDS_BUCKETS)}
    counts = ended.aggregate(
        total=Count("pk"),
        seconds=Sum("took"),
        **{name: Count("pk", filter=Q(took__lte=limit)) for name, limit in limits.items()},
    )
    buckets = [(str(float(b)), counts[f"le_{i}"]) for i, b in enumerate(RUN_SECONDS_BUCKETS)]
    buckets.append(("+Inf", counts["total"]))
    family = HistogramMetricFamily(
        "studio_run_duration_seconds", "Ended runs by how long they ran."
    )
    seconds: timedelta | None = counts["seconds"]
    family.add_metric((), buckets, sum_value=seconds.total_seconds() if seconds else 0.0)
    return family


REGISTRY.register(StoredRuns())
