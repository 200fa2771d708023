"""The trace export port: where ended runs' traces go. ``studio.traces.otel.configure``
picks one adapter at start-up, from ``OTEL_TRACES_EXPORTER``: ``NoExport`` (the
default) or ``otlp.OtlpExport`` (OTLP/HTTP).

An adapter never slows or breaks a run: ``run_ended`` returns at once and raises
nothing; what cannot be exported is dropped, counted (``dropped``) and logged.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence

from agents_core.spans import Span
from studio.models import Run

FLUSH_TIMEOUT_S = 5.0
"""How long stopping waits for the spans still queued to be exported."""


class TraceExport(abc.ABC):
    """Where ended runs' traces go."""

    @abc.abstractmethod
    def run_ended(self, run: Run, spans: Sequence[Span]) -> None:
        """Export ended ``run`` (committed) with its final ``spans``, off this thread."""

    def shutdown(self, timeout_s: float = FLUSH_TIMEOUT_S) -> None:  # noqa: B027
        """Export what waits, for at most ``timeout_s``, and stop (idempotent)."""

    @property
    def dropped(self) -> int:
        """How many spans could not be exported since start-up."""
        return 0


class NoExport(TraceExport):
    """The default: runs are not exported."""

    def run_ended(self, run: Run, spans: Sequence[Span]) -> None:
        return None
