"""OTLP trace ingest's per-token rate limit holds across servers: two Daphnes on one
PostgreSQL database and one Redis, an exporter's requests spread over both, and the
token's burst is one budget for the two, not one per server."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.scale.cluster import Cluster, start_cluster
from tests.support.daphne_server import DaphneServer
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of

pytestmark = pytest.mark.timeout(300)

BURST = 4
RATE_PER_S = 0.01
WINDOW_S = BURST / RATE_PER_S
"""A token's window (``studio.gates.rate_limits.take_ingest``): 400 s, far longer than
the test, which tries again with a fresh token in the rare case it straddled two."""

_TOKENS = """
from django.contrib.auth import get_user_model
from studio.models import IngestToken
from studio.services import tokens
owner = get_user_model().objects.get(username="scale")
print(",".join(tokens.create_token(IngestToken, owner, f"exporter {i}")[1] for i in range(3)))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    limits = {"STUDIO_OTLP_BURST": str(BURST), "STUDIO_OTLP_RATE_PER_S": str(RATE_PER_S)}
    data = tmp_path_factory.mktemp("otlp-rate")
    with start_cluster(data, [], servers=2, lease_s=30.0, extra_env=limits) as started:
        yield started
        started.print_output()


def post(server: DaphneServer, token: str) -> tuple[int, str | None]:
    """(status, Retry-After) of one export of a new trace to ``server``."""
    body = request_of(*agent_trace(new_trace_id())).SerializeToString()
    request = urllib.request.Request(
        f"{server.url}/v1/traces",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-protobuf"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers.get("Retry-After")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.headers.get("Retry-After")


def test_a_tokens_burst_is_shared_by_every_server(cluster: Cluster) -> None:
    one, other = cluster.servers
    tokens = one.manage("shell", "-c", _TOKENS).stdout.strip().splitlines()[-1].split(",")
    accepted = 0
    for token in tokens[:2]:  # a second token only if the first straddled two windows
        began = time.time()
        answers = [post(one if i % 2 else other, token) for i in range(BURST + 2)]
        accepted += sum(status == 200 for status, _ in answers)
        if int(began // WINDOW_S) == int(time.time() // WINDOW_S):
            break
    statuses = [status for status, _ in answers]
    # BURST accepted between the two servers, then both refuse: one count, not one each
    assert statuses == [200] * BURST + [429, 429], answers
    waits = [int(wait) for status, wait in answers if status == 429 and wait is not None]
    assert len(waits) == 2 and all(1 <= wait <= WINDOW_S for wait in waits), answers
    # another token of the same owner has a window of its own
    assert post(one, tokens[2])[0] == 200
    traces = json.loads(other.manage("shell", "-c", _COUNT).stdout.strip().splitlines()[-1])
    assert traces == accepted + 1  # each accepted export a trace, each refused stored nothing


_COUNT = """
from studio.models import IngestedTrace
print(IngestedTrace.objects.count())
"""
