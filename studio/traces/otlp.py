"""The OTLP/HTTP adapter of the trace export (``OTEL_TRACES_EXPORTER=otlp``).

Built on the OpenTelemetry SDK, which reads the standard variables itself
(``OTEL_EXPORTER_OTLP_*``, ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``,
``OTEL_BSP_*``, ``OTEL_TRACES_SAMPLER``; ``studio.conf`` checks them at start-up):

- ``run_ended`` puts the run in a bounded queue and returns: the run's end and its final
  status to viewers never wait for the export.
- A thread of its own reads which model each agent calls, turns the run into a trace
  (``genai``) and starts and ends its spans with their own ids and times.
- The SDK's ``BatchSpanProcessor`` exports them in batches from its own thread. At most
  ``OTEL_BSP_MAX_QUEUE_SIZE`` spans wait or are in flight (``_Bounded``): a span past
  that is dropped, and so is a batch the collector refused or never answered in time
  (``_Counting``). Drops are counted and logged, one WARNING line for each run or batch
  with the count, never a traceback per span.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import close_old_connections
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from agents_core.spans import Span
from studio.agents import specs, versions
from studio.models import ModelConfig, Run
from studio.traces import genai
from studio.traces.exporter import FLUSH_TIMEOUT_S, TraceExport

logger = logging.getLogger("studio.traces")

RUNS_QUEUED = 1_000
"""How many ended runs may wait to be read into traces."""
SAMPLED = TraceFlags(TraceFlags.SAMPLED)


@dataclass(slots=True)
class _Counts:
    """Spans handed to the batch processor and not yet through, and those dropped."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    pending: int = 0
    dropped: int = 0
    exported: int = 0

    def drop(self, count: int) -> int:
        with self.lock:
            self.dropped += count
            return self.dropped


@dataclass(slots=True)
class _Ended:
    run: Run
    spans: Sequence[Span]


class OtlpExport(TraceExport):
    """Exports every ended run as a trace over OTLP/HTTP; see the module docstring."""

    def __init__(self, *, capture_content: bool, max_queue_size: int) -> None:
        self._capture = capture_content
        self._counts = _Counts()
        self._ids = _StudioIds()
        batches = BatchSpanProcessor(
            _Counting(OTLPSpanExporter(), self._counts), max_queue_size=max_queue_size
        )
        self._provider = TracerProvider(
            resource=_resource(), id_generator=self._ids, shutdown_on_exit=False
        )
        self._provider.add_span_processor(_Bounded(batches, self._counts, max_queue_size))
        self._tracer = self._provider.get_tracer("studio")
        self._ended: queue.Queue[_Ended | None] = queue.Queue(RUNS_QUEUED)
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="studio-otel", daemon=True)
        self._reader.start()
        atexit.register(self.shutdown)

    @property
    def dropped(self) -> int:
        return self._counts.dropped

    @property
    def exported(self) -> int:
        """How many spans the collector took since start-up."""
        return self._counts.exported

    def run_ended(self, run: Run, spans: Sequence[Span]) -> None:
        if self._closed:
            return
        try:
            self._ended.put_nowait(_Ended(run, list(spans)))
        except queue.Full:
            total = self._counts.drop(len(spans) + 1)
            logger.warning(
                "OpenTelemetry export: %d runs wait to be exported; run %s dropped "
                "(%d spans), %d spans dropped in all",
                RUNS_QUEUED,
                run.pk,
                len(spans) + 1,
                total,
            )

    def shutdown(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.shutdown)
        deadline = time.monotonic() + timeout_s
        with contextlib.suppress(queue.Full):
            self._ended.put(None, timeout=timeout_s)
        # The reader exports what waits, then what the SDK holds (its shutdown waits up
        # to 30 s for a collector that does not answer): this waits for it within the
        # bound, and leaves the rest behind (at exit, no new thread can start).
        self._reader.join(max(0.0, deadline - time.monotonic()))
        left = self._counts.pending + sum(len(e.spans) + 1 for e in _drain(self._ended))
        if left:
            logger.warning(
                "OpenTelemetry export: stopped after %.1fs with %d spans not exported",
                timeout_s,
                left,
            )

    # The reader's thread

    def _read(self) -> None:
        """Export each ended run until ``shutdown``, then flush the SDK's batches."""
        while (ended := self._ended.get()) is not None:
            try:
                self._export(ended)
            except Exception as exc:  # one run's failure never stops the others'
                total = self._counts.drop(len(ended.spans) + 1)
                logger.warning(
                    "OpenTelemetry export: run %s not exported (%s: %s); %d spans dropped in all",
                    ended.run.pk,
                    type(exc).__name__,
                    exc,
                    total,
                )
            finally:
                close_old_connections()
        self._provider.shutdown()

    def _export(self, ended: _Ended) -> None:
        trace = genai.trace_of(_facts(ended.run), ended.spans, capture_content=self._capture)
        before = self._counts.dropped
        flags = SAMPLED
        for span in trace:
            flags = self._emit(span, flags)
        refused = self._counts.dropped - before
        if refused:
            logger.warning(
                "OpenTelemetry export: queue full (OTEL_BSP_MAX_QUEUE_SIZE); %d of the %d "
                "spans of run %s dropped, %d dropped in all",
                refused,
                len(trace),
                ended.run.pk,
                self._counts.dropped,
            )

    def _emit(self, span: genai.OtelSpan, flags: TraceFlags) -> TraceFlags:
        """Start and end ``span`` with its own ids and times; its trace's sampling
        decision (taken on its root) is returned for the spans under it."""
        self._ids.next = (span.trace_id, span.span_id)
        within = otel_context.Context()
        if span.parent_id is not None:
            parent = SpanContext(span.trace_id, span.parent_id, is_remote=False, trace_flags=flags)
            within = otel_trace.set_span_in_context(otel_trace.NonRecordingSpan(parent), within)
        started = self._tracer.start_span(
            span.name,
            context=within,
            kind=span.kind,
            attributes=span.attributes,
            start_time=span.start_ns,
            record_exception=False,
            set_status_on_exception=False,
        )
        if span.error is not None:
            started.set_status(Status(StatusCode.ERROR, span.error))
        started.end(end_time=span.end_ns)
        return started.get_span_context().trace_flags if span.parent_id is None else flags


class _StudioIds(IdGenerator):
    """The ids ``genai`` derived from Studio's, for the span being started (spans are
    started on the reader's thread only)."""

    next: tuple[int, int] = (0, 0)

    def generate_trace_id(self) -> int:
        return self.next[0]

    def generate_span_id(self) -> int:
        return self.next[1]


class _Bounded(SpanProcessor):
    """The batch processor, with at most ``capacity`` spans waiting or in flight: past
    that a span is dropped (and counted) rather than pushing out a queued one."""

    def __init__(self, inner: SpanProcessor, counts: _Counts, capacity: int) -> None:
        self._inner, self._counts, self._capacity = inner, counts, capacity

    def on_end(self, span: ReadableSpan) -> None:
        with self._counts.lock:
            if self._counts.pending >= self._capacity:
                self._counts.dropped += 1
                return
            self._counts.pending += 1
        self._inner.on_end(span)

    def on_start(self, span: SdkSpan, parent_context: otel_context.Context | None = None) -> None:
        return None

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


class _Counting(SpanExporter):
    """The OTLP exporter, counting the spans of each batch through and those of each
    batch that failed (refused, unreachable, timed out): dropped."""

    def __init__(self, inner: SpanExporter, counts: _Counts) -> None:
        self._inner, self._counts = inner, counts

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception:  # the exporter reports failures; this is a last resort
            result = SpanExportResult.FAILURE
        failed = result is not SpanExportResult.SUCCESS
        with self._counts.lock:
            self._counts.pending -= len(spans)
            if failed:
                self._counts.dropped += len(spans)
            else:
                self._counts.exported += len(spans)
            total = self._counts.dropped
        if failed:
            logger.warning(
                "OpenTelemetry export: the collector did not take %d spans; %d dropped in all",
                len(spans),
                total,
            )
        return result

    def shutdown(self) -> None:
        self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis)


def _facts(run: Run) -> genai.RunFacts:
    """What the trace says of ``run`` (loaded by ``end_run`` with its agent version)."""
    version = run.session.agent_version
    read = versions.version_models(version) if version is not None else None
    if read is None:
        return genai.RunFacts.of(run, agent=specs.root_agent_name(version), models={})
    return genai.RunFacts.of(
        run,
        agent=specs.root_agent_name(version),
        models=read.agent_models,
        providers={agent: _provider(config) for agent, config in read.by_agent.items()},
        summariser=(read.summary_model, _provider(read.summary)) if read.summary else None,
    )


def _provider(config: ModelConfig) -> str:
    return genai.provider_name(config.provider, config.base_url)


def _resource() -> Resource:
    """The SDK's resource (``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_SERVICE_NAME``), named
    ``studio`` unless those name the service."""
    found = Resource.create()
    if str(found.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        found = found.merge(Resource({SERVICE_NAME: "studio"}))
    return found


def _drain(waiting: queue.Queue[_Ended | None]) -> list[_Ended]:
    left: list[_Ended] = []
    with contextlib.suppress(queue.Empty):
        while True:
            item = waiting.get_nowait()
            if item is not None:
                left.append(item)
    return left
