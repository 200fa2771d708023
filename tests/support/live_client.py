"""Real clients of a real Studio server: the REST API over urllib (token auth) and the
live timeline over websockets (session cookie), for the end-to-end live-run tests."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from tests.support.daphne_server import DaphneServer

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}

_SETUP = """
import json, os
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from rest_framework.authtoken.models import Token
from studio import services
from studio.models import ModelConfig

with open(os.environ["LIVE_SETUP"]) as f:
    setup = json.load(f)
user, _ = get_user_model().objects.get_or_create(username=setup["username"])
agents = {}
for agent in setup["agents"]:
    ModelConfig.objects.create(
        owner=user, name=agent["spec"]["model"], provider="scripted", options=agent["options"]
    )
    agents[agent["spec"]["name"]] = str(
        services.create_agent(user, name=agent["spec"]["name"], spec=agent["spec"]).pk
    )
store = SessionStore()
store[SESSION_KEY] = str(user.pk)
store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
store[HASH_SESSION_KEY] = user.get_session_auth_hash()
store.create()
token, _ = Token.objects.get_or_create(user=user)
print(json.dumps({"agents": agents, "cookie": store.session_key, "token": token.key}))
"""


def prepare_live_data(
    server: DaphneServer, username: str, agents: list[dict[str, Any]]
) -> dict[str, Any]:
    """Create ``agents`` (each ``{"spec", "options"}`` of its own scripted model), a signed
    in browser session and an API token for ``username`` (created if missing, with no
    usable password) in ``server``'s data."""
    path = Path(server.data_dir) / "live_setup.json"
    path.write_text(json.dumps({"username": username, "agents": agents}))
    server.env["LIVE_SETUP"] = str(path)
    output = server.manage("shell", "-c", _SETUP).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


@dataclass
class Api:
    """Studio's REST API with a token."""

    base_url: str
    token: str

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.base_url}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, payload = self.call(method, path, body)
        if status >= 300:
            raise AssertionError(f"{method} {path} answered {status}: {payload}")
        return payload

    def new_session(self, agent_id: str) -> str:
        return str(self.ok("POST", "/api/sessions/", {"agent": agent_id})["id"])

    def send(self, session_id: str, text: str) -> dict[str, Any]:
        run: dict[str, Any] = self.ok(
            "POST", f"/api/sessions/{session_id}/messages/", {"text": text}
        )
        return run

    def run(self, run_id: str) -> dict[str, Any]:
        run: dict[str, Any] = self.ok("GET", f"/api/runs/{run_id}/")
        return run

    def events(self, session_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            page = self.ok(
                "GET", f"/api/sessions/{session_id}/events/?after={len(found)}&limit=500"
            )
            found += page["results"]
            if page["next"] is None:
                return found

    def runs(self, **filters: str) -> list[dict[str, Any]]:
        query = "&".join(f"{k}={v}" for k, v in filters.items())
        return list(self.ok("GET", f"/api/runs/?{query}")["results"])

    def hung_agent(self, name: str, model: str, mcp_url: str) -> str:
        """Register the MCP server at ``mcp_url`` (one that never answers:
        ``tests.support.mcp_server.serve_silence``) and an agent on ``model`` that uses
        it, both named ``name``: its runs are claimed, then wait before the runner
        starts. Returns the agent's id."""
        server = {"name": name, "transport": "http", "url": mcp_url}
        self.ok("POST", "/api/mcp-servers/", server)
        spec = {"name": name, "model": model, "instruction": "Wait.", "mcp": [{"server": name}]}
        return str(self.ok("POST", "/api/agents/", {"name": name, "spec": spec})["id"])

    def wait_for_run(self, run_id: str, statuses: set[str], within: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while True:
            run = self.run(run_id)
            if run["status"] in statuses:
                return run
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} still {run['status']} after {within}s")
            time.sleep(0.25)


@dataclass
class LiveViewer:
    """One websocket viewer. ``seqs`` and ``events`` are the stored events received over
    every connection it made; ``duplicates`` and ``gaps`` record protocol breaches."""

    ws_url: str
    origin: str
    cookie: str
    session_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    partials: int = 0
    status: dict[str, Any] | None = None
    duplicates: list[int] = field(default_factory=list)
    gaps: list[tuple[int, int]] = field(default_factory=list)
    connections: int = 0

    @property
    def last_seq(self) -> int:
        return self.events[-1]["seq"] if self.events else 0

    @property
    def seqs(self) -> list[int]:
        return [event["seq"] for event in self.events]

    @property
    def ended(self) -> bool:
        return self.status is not None and (self.status.get("run") or {}).get("status") in ENDED

    async def open(self, sock: socket.socket | None = None) -> ClientConnection:
        """Connect, resuming after the last seq received; over ``sock`` (connected to
        the server) when given."""
        self.connections += 1
        self.status = None
        return await connect(
            f"{self.ws_url}/ws/sessions/{self.session_id}/?after={self.last_seq}",
            origin=self.origin,  # type: ignore[arg-type]
            additional_headers={"Cookie": f"sessionid={self.cookie}"},
            max_size=2**24,
            # No flow control on the client's side: a viewer that stops reading to close
            # (as a tab does) must still read the server's close frame, which comes after
            # the frames in flight. With websockets' default (16 frames queued, then it
            # stops reading the socket) it waited out its 10 s close timeout instead.
            max_queue=None,
            open_timeout=10,
            sock=sock,
        )

    def take(self, frame: dict[str, Any]) -> None:
        if frame["type"] == "status":
            self.status = frame
        elif frame["type"] == "event" and frame["event"]["partial"]:
            self.partials += 1
        elif frame["type"] == "event":
            seq = frame["event"]["seq"]
            if seq <= self.last_seq:
                self.duplicates.append(seq)
                return
            if seq != self.last_seq + 1:
                self.gaps.append((self.last_seq, seq))
            self.events.append(frame["event"])

    async def receive(self, ws: ClientConnection, within: float) -> dict[str, Any]:
        async with asyncio.timeout(within):
            frame: dict[str, Any] = json.loads(await ws.recv())
        self.take(frame)
        return frame

    async def watch_until_ended(self, ws: ClientConnection, within: float = 240.0) -> None:
        """Receive until the run has ended (a bound against a hang, not a time to meet:
        fifty viewers of a 2,000-event run took over 120 s on a slow day's two cores)."""
        deadline = time.monotonic() + within
        while not self.ended:
            await self.receive(ws, deadline - time.monotonic())

    async def watch_until(self, ws: ClientConnection, stored: int, within: float = 60.0) -> bool:
        """Receive until ``stored`` stored events have arrived; False if the connection
        dropped first."""
        deadline = time.monotonic() + within
        try:
            while len(self.events) < stored and not self.ended:
                await self.receive(ws, deadline - time.monotonic())
        except ConnectionClosed:
            return False
        return True
