"""OpenTelemetry export, beyond the collector: who serves each model call
(``gen_ai.provider.name``), and ended runs arriving faster than they are read into
traces: past the run queue a run is dropped at once, counted and logged, and the runs
before it are still exported."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth.models import User

from studio.models import Run
from studio.traces import genai, otlp
from tests.studio.test_traces_otel import (
    Start,
    exported,
    plain_run,
    start_export,  # noqa: F401  (a fixture)
    taken,
    warnings_of,
)
from tests.support.live import (
    eventually,
    run_manager,  # noqa: F401  (an autouse fixture)
)
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("provider", "base_url", "name"),
    [
        ("openai_compatible", "", "openai"),
        ("openai_compatible", "https://api.openai.com/v1", "openai"),
        ("openai_compatible", "https://api.anthropic.com/v1/", "anthropic"),
        ("openai_compatible", "https://ada.openai.azure.com/openai/v1", "azure.ai.openai"),
        ("openai_compatible", "http://127.0.0.1:11434/v1", "openai_compatible"),
        ("openai_compatible", "https://notopenai.com/v1", "openai_compatible"),
        ("scripted", "", "studio.scripted"),
    ],
)
def test_a_model_configs_provider_name_follows_the_conventions(
    provider: str, base_url: str, name: str
) -> None:
    assert genai.provider_name(provider, base_url) == name


async def test_a_run_past_the_run_queue_is_dropped_counted_and_logged(
    ada: User,
    start_export: Start,  # noqa: F811
    otlp_receiver: OtlpReceiver,  # noqa: F811
    caplog: Any,
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(otlp, "RUNS_QUEUED", 1)
    reading, release = threading.Event(), threading.Event()
    facts = otlp._facts

    def slow_facts(run: Run) -> genai.RunFacts:  # the reader's thread, held on its first run
        reading.set()
        release.wait(10)
        return facts(run)

    monkeypatch.setattr(otlp, "_facts", slow_facts)
    export = start_export()
    try:
        first = await plain_run(ada)  # three spans: the run, its agent, its model call

        async def held() -> bool:
            return reading.is_set()

        await eventually(held)
        second = await plain_run(ada)  # waits in the queue, which now is full
        third = await plain_run(ada)  # ends all the same; its trace is dropped at once
        assert third.status == "succeeded"

        async def dropped() -> int:
            return export.dropped

        assert await eventually(dropped) == 3
        assert warnings_of(caplog) == [
            f"OpenTelemetry export: 1 runs wait to be exported; run {third.pk} dropped "
            "(3 spans), 3 spans dropped in all"
        ]
    finally:
        release.set()
    await exported(otlp_receiver, first, 3)
    await exported(otlp_receiver, second, 3)
    await taken(export, 6)
    assert otlp_receiver.trace(third.pk.hex) == []
    assert export.dropped == 3
