"""OpenTelemetry export from real processes: a Daphne server and ``manage.py run_agent``
flush the traces of the runs they ended as they stop, to a real OTLP/HTTP receiver
(batches would otherwise wait ten minutes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.live_client import ENDED, Api, prepare_live_data
from tests.support.otlp_receiver import OtlpReceiver, otlp_receiver  # noqa: F401

AGENT = {
    "spec": {"name": "greeter", "model": "greeter_model", "instruction": "Say hi."},
    "options": {"script": [{"text": "hi"}], "loop": True},
}


def export_env(receiver: OtlpReceiver) -> dict[str, str]:
    return {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_BSP_SCHEDULE_DELAY": "600000",
        "OTEL_SERVICE_NAME": "studio-e2e",
    }


@pytest.fixture
def exporting_server(
    tmp_path: Path,
    seeded_data: Path,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> Iterator[DaphneServer]:
    with daphne_server(
        tmp_path / "data", export_env(otlp_receiver), template=seeded_data
    ) as started:
        yield started


def test_a_stopping_server_flushes_the_traces_of_its_runs(
    exporting_server: DaphneServer,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> None:
    setup = prepare_live_data(exporting_server, "ada", [AGENT])
    api = Api(exporting_server.url, setup["token"])
    session_id = api.new_session(setup["agents"]["greeter"])
    run = api.wait_for_run(api.send(session_id, "hello")["id"], ENDED)
    assert run["status"] == "succeeded"
    assert otlp_receiver.requests == 0  # the batch waits for its schedule, or the stop

    exporting_server.stop()  # SIGTERM
    trace = otlp_receiver.trace(run["id"].replace("-", ""))
    assert sorted(span.name for span in trace) == [
        "chat greeter_model",
        "invoke_agent greeter",
        "invoke_agent greeter",
    ], "".join(exporting_server.output)
    assert {span.resource["service.name"] for span in trace} == {"studio-e2e"}
    [root] = [span for span in trace if span.parent_span_id is None]
    assert root.attributes["studio.run.id"] == run["id"]


def test_run_agent_flushes_its_run_s_trace_as_it_exits(
    server: DaphneServer,
    otlp_receiver: OtlpReceiver,  # noqa: F811
) -> None:
    prepare_live_data(server, "ada", [AGENT])
    server.env.update(export_env(otlp_receiver))
    done = server.manage("run_agent", "greeter", "hello", "--user", "ada")
    run_id = _run_id(done.stderr)
    trace = otlp_receiver.trace(run_id.replace("-", ""))
    assert len(trace) == 3, done.stderr


def _run_id(stderr: str) -> str:
    for line in stderr.splitlines():
        if line.startswith("session ") and ", run " in line:
            return line.rsplit(" ", 1)[-1]
    raise AssertionError(stderr)
