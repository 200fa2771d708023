"""The export's settings: off unless ``OTEL_TRACES_EXPORTER=otlp``, and a bad value of
any standard variable the SDK reads stops start-up with a message naming it (and never
quoting a header, which may carry the collector's token)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from studio import conf


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_TRACES_EXPORTER", "jaeger"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://collector/v1/traces"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon"),
        ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "zstd"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer s3cret,no-value"),
        ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "0"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4096"),
    ],
)
def test_bad_export_settings_stop_start_up_naming_the_variable(
    monkeypatch: Any, variable: str, value: str
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    monkeypatch.setenv(variable, value)
    with pytest.raises(ImproperlyConfigured) as refused:
        conf.env_otel_traces_exporter()
    assert variable in str(refused.value)
    assert "s3cret" not in str(refused.value)


def test_export_is_off_unless_asked_for(monkeypatch: Any) -> None:
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    assert conf.env_otel_traces_exporter() == "none"
    for off in ("", "none", "NONE"):
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", off)
        assert conf.env_otel_traces_exporter() == "none"
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
    assert conf.env_otel_traces_exporter() == "otlp"
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert conf.env_otel_traces_exporter() == "none"
