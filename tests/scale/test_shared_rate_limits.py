"""Rate limits hold across servers: two Daphnes on one PostgreSQL database and one Redis,
requests spread over both, and each limit is one budget for the two, not one per server.

- OTLP trace ingest: an exporter's requests, and its token's burst.
- Sign-in: attempts on the sign-in page and at the token exchange, by the client's
  address and the username.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

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
SIGN_INS_PER_DAY = 4

_TOKENS = """
from django.contrib.auth import get_user_model
from studio.models import IngestToken
from studio.services import tokens
owner = get_user_model().objects.get(username="scale")
print(",".join(tokens.create_token(IngestToken, owner, f"exporter {i}")[1] for i in range(3)))
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    limits = {
        "STUDIO_OTLP_BURST": str(BURST),
        "STUDIO_OTLP_RATE_PER_S": str(RATE_PER_S),
        "STUDIO_AUTH_THROTTLE_RATE": f"{SIGN_INS_PER_DAY}/day",
    }
    data = tmp_path_factory.mktemp("rate-limits")
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
    return answer(urllib.request.urlopen, request)


def answer(open_: Callable[..., Any], request: urllib.request.Request) -> tuple[int, str | None]:
    """(status, Retry-After) of ``request``, sent with ``open_`` (an opener's ``open``,
    or ``urlopen``), refused or not."""
    try:
        with open_(request, timeout=30) as answered:
            return answered.status, answered.headers.get("Retry-After")
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


class SignIns:
    """Wrong-password sign-in attempts as "scale", through the sign-in page's form (with
    its CSRF cookie) or the token exchange, on either server: (status, Retry-After)."""

    def __init__(self) -> None:
        self._browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )

    def page(self, server: DaphneServer) -> tuple[int, str | None]:
        with self._browser.open(f"{server.url}/accounts/login/", timeout=30) as form:
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.read().decode())
        assert token is not None
        fields = {"csrfmiddlewaretoken": token[1], "username": "scale", "password": "guess"}
        return self._answer(f"{server.url}/accounts/login/", urllib.parse.urlencode(fields))

    def token(self, server: DaphneServer) -> tuple[int, str | None]:
        body = json.dumps({"username": "scale", "password": "guess"})
        return self._answer(f"{server.url}/api/auth/token/", body, "application/json")

    def _answer(
        self, url: str, body: str, content_type: str = "application/x-www-form-urlencoded"
    ) -> tuple[int, str | None]:
        request = urllib.request.Request(
            url, data=body.encode(), method="POST", headers={"Content-Type": content_type}
        )
        return answer(self._browser.open, request)


_FORGET_SIGN_INS = """
from studio.models import SignInWindow
SignInWindow.objects.all().delete()
"""


def test_sign_in_attempts_are_one_count_for_every_server_and_both_ways_in(
    cluster: Cluster,
) -> None:
    one, other = cluster.servers
    day = 86_400
    for _ in range(2):  # again only if the attempts straddled two days' windows
        began, signs = time.time(), SignIns()
        answers = [
            signs.page(one),
            signs.token(other),
            signs.page(other),
            signs.token(one),
            signs.page(one),
            signs.token(other),
        ]
        if int(began // day) == int(time.time() // day):
            break
        one.manage("shell", "-c", _FORGET_SIGN_INS)
    statuses = [status for status, _ in answers]
    # the form again (200) and a refused exchange (400) while attempts last, on either
    # server; then both servers refuse, on both ways in: one count, not four
    assert statuses == [200, 400, 200, 400, 429, 429], answers
    waits = [int(wait) for status, wait in answers if status == 429 and wait is not None]
    assert len(waits) == 2 and all(1 <= wait <= day for wait in waits), answers
