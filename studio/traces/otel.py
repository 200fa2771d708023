"""OpenTelemetry export of every run as a trace: the choice of exporter, made once.

``configure`` (``StudioConfig.ready``) picks the adapter of the ``exporter`` port from
``OTEL_TRACES_EXPORTER``: ``NoExport`` when it is unset or ``none`` (the default),
``otlp.OtlpExport`` (OTLP/HTTP) when it is ``otlp``; nothing else reads the setting.
``records.end_run``, the one way a run ends, hands the ended run and its final spans to
``export().run_ended`` once its ending is committed, whatever ended it: the inline
executor, a worker, a cancel before it started, a recovery sweep. ``shutdown`` flushes
what waits within a bounded time, as servers and workers stop (and at process exit).
"""

from __future__ import annotations

from django.conf import settings

from studio.traces.exporter import NoExport, TraceExport

_export: TraceExport | None = None


def configure() -> TraceExport:
    """Choose the adapter from ``OTEL_TRACES_EXPORTER`` (Studio's app does at start-up;
    a test that changes the settings calls it again), stopping the one before."""
    global _export
    if _export is not None:
        _export.shutdown()
    if settings.OTEL_TRACES_EXPORTER == "otlp":
        from studio.traces.otlp import OtlpExport

        _export = OtlpExport(
            capture_content=settings.STUDIO_OTEL_CAPTURE_CONTENT,
            max_queue_size=settings.OTEL_BSP_MAX_QUEUE_SIZE,
        )
    else:
        _export = NoExport()
    return _export


def export() -> TraceExport:
    """The adapter chosen at start-up."""
    return _export or configure()


def shutdown() -> None:
    """Flush and stop the export, as a server or worker stops."""
    if _export is not None:
        _export.shutdown()
