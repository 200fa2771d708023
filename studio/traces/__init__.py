"""Traces: a run's spans (``agents_core.spans``) read from its stored events, where its
wall time went, and its export as an OpenTelemetry trace. ``reads`` reads spans from the
database for the API and pages; ``timing`` splits a run's wall time by span kind;
``otel`` chooses the ``exporter`` at start-up (``otlp``, or none), which exports each
ended run's spans as ``genai`` makes them into a trace."""
