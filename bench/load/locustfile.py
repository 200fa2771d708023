"""The many-users scenario (issue 20, "Many users"), run by ``bench.load.run``.

Two kinds of simulated user against every server of a scaled deployment:

- ``Browser``: signed in, opens the pages (session list, a session's timeline and
  waterfall, agents, overview) and the REST API (sessions, a session's events, costs)
  of one Studio account, pausing 1-3 s between them, on a server picked at random.
- ``Watcher`` (``LOAD_LIVE`` of them): owns a session; opens its live timeline over the
  websocket on one server, sends a message through the API of the other (so the run
  executes in a worker and reaches the viewer through Redis), and watches until the
  run ends. Every stored event it receives is written to ``LOAD_RECEIPTS`` as
  ``<event id> <time.time_ns()>``, which the runner joins with the workers' commit log.

``LOAD_SETUP`` names the JSON the runner wrote: the servers' URLs, the account's
session cookie and API token, its agent, and a few sessions for the browsers to open.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

import websocket
from locust import HttpUser, User, between, events, task

from bench.load.frames import run_ended, stored_event, until_status

SETUP: dict[str, Any] = json.loads(open(os.environ["LOAD_SETUP"]).read())  # noqa: SIM115
SERVERS: list[str] = SETUP["servers"]
RUN_TIMEOUT_S = float(os.environ.get("LOAD_RUN_TIMEOUT_S", "180"))
_receipts = open(os.environ["LOAD_RECEIPTS"], "a", buffering=1)  # noqa: SIM115


class Browser(HttpUser):
    wait_time = between(1, 3)
    host = SERVERS[0]

    def on_start(self) -> None:
        self.client.cookies.set("sessionid", SETUP["cookie"])
        self.api = {"Authorization": f"Token {SETUP['token']}"}

    def _page(self, path: str, name: str) -> None:
        self.client.get(random.choice(SERVERS) + path, name=f"page {name}")

    def _api(self, path: str, name: str) -> None:
        self.client.get(random.choice(SERVERS) + path, name=f"api {name}", headers=self.api)

    @task(4)
    def session_list(self) -> None:
        self._page("/sessions/", "/sessions/")

    @task(3)
    def timeline(self) -> None:
        self._page(f"/sessions/{random.choice(SETUP['sessions'])}/", "/sessions/<id>/")

    @task(1)
    def waterfall(self) -> None:
        session = random.choice(SETUP["sessions"])
        self._page(f"/sessions/{session}/waterfall/", "/sessions/<id>/waterfall/")

    @task(1)
    def agents(self) -> None:
        self._page("/agents/", "/agents/")

    @task(1)
    def overview(self) -> None:
        self._page("/overview/", "/overview/")

    @task(3)
    def api_sessions(self) -> None:
        self._api("/api/sessions/", "/api/sessions/")

    @task(2)
    def api_events(self) -> None:
        session = random.choice(SETUP["sessions"])
        self._api(f"/api/sessions/{session}/events/?limit=100", "/api/sessions/<id>/events/")

    @task(1)
    def api_costs(self) -> None:
        self._api("/api/costs/?group_by=agent", "/api/costs/")


class Watcher(User):
    """One live run at a time, watched over the websocket; see the module's doc."""

    fixed_count = int(os.environ.get("LOAD_LIVE", "50"))
    wait_time = between(0.5, 2)
    _count = 0

    def on_start(self) -> None:
        Watcher._count += 1
        self.index = Watcher._count
        self.session = self._post(SERVERS[0], "/api/sessions/", {"agent": SETUP["agent"]})["id"]
        self.last_seq = 0

    def _post(self, server: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import urllib.request

        request = urllib.request.Request(  # noqa: S310 (http on loopback)
            server + path,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Authorization": f"Token {SETUP['token']}",
                "Content-Type": "application/json",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            result: dict[str, Any] = json.loads(response.read())
            return result

    @task
    def watch_a_run(self) -> None:
        viewer, sender = (
            SERVERS[self.index % len(SERVERS)],
            SERVERS[(self.index + 1) % len(SERVERS)],
        )
        started = time.perf_counter()
        try:
            received = self._watch(viewer, sender)
        except Exception as error:  # reported to Locust as the run's failure
            self._report("ws live run", started, 0, error)
            return
        self._report("ws live run", started, received, None)

    def _watch(self, viewer: str, sender: str) -> int:
        url = (
            viewer.replace("http", "ws", 1) + f"/ws/sessions/{self.session}/?after={self.last_seq}"
        )
        ws = websocket.create_connection(
            url, header=[f"Cookie: sessionid={SETUP['cookie']}"], origin=viewer, timeout=30
        )
        try:
            until_status(ws)
            run = self._post(sender, f"/api/sessions/{self.session}/messages/", {"text": "go"})
            return self._receive(ws, run["id"])
        finally:
            ws.close()

    def _receive(self, ws: websocket.WebSocket, run_id: str) -> int:
        deadline, received = time.monotonic() + RUN_TIMEOUT_S, 0
        while time.monotonic() < deadline:
            raw = ws.recv()
            now = time.time_ns()
            frame = json.loads(raw)
            if (event := stored_event(frame)) is not None:
                _receipts.write(f"{event['id']} {now}\n")
                self.last_seq = max(self.last_seq, int(event["seq"]))
                received += 1
            if run_ended(frame, run_id):
                return received
        raise TimeoutError(f"run {run_id} did not end within {RUN_TIMEOUT_S} s")

    def _report(self, name: str, started: float, received: int, error: Exception | None) -> None:
        events.request.fire(
            request_type="WS",
            name=name,
            response_time=(time.perf_counter() - started) * 1000,
            response_length=received,
            exception=error,
            context={},
        )
