"""Live runs on a real Daphne with real websocket clients: many viewers of one long
run, random disconnects with resume, viewers dropped while the server sends to them,
and kill -9 of the server in the middle of runs."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.live_client import ENDED, Api, LiveViewer, prepare_live_data
from tests.support.mcp_server import serve_silence

ENV = {
    # Short leases so a killed server's runs are recovered within a second or two.
    "STUDIO_RUN_LEASE_S": "1",
    "STUDIO_SHELL_ALLOWLIST": "sleep",
    "STUDIO_MAX_CONCURRENT_RUNS_PER_USER": "50",
}
LIMITS = {"max_steps": 1000, "max_model_calls": 1000, "max_tool_calls": 2000}
TOOL_STEPS = 499
"""Each step stores an agent_message and three tool_responses: with the user message,
agent start, final answer and agent end, a run of 2,000 stored events."""


def _calc(expression: str) -> dict[str, Any]:
    return {"name": "calculator", "args": {"expression": expression}}


def _scripted(
    name: str, script: list[dict[str, Any]], tools: list[str], **options: Any
) -> dict[str, Any]:
    """A scripted agent (spec and model options) that plays ``script`` once; its one
    long turn is what the tests count, so no compaction event follows it."""
    return {
        "spec": {
            "name": name,
            "model": f"{name}_model",
            "instruction": "Play the script.",
            "tools": [{"name": tool} for tool in tools],
            "max_iterations": 1000,
            "limits": LIMITS,
            "compaction": {"enabled": False},
        },
        "options": {"script": script, "loop": False, **options},
    }


def many_events_agent(name: str = "many", steps: int = TOOL_STEPS) -> dict[str, Any]:
    """A run of ``4 * steps + 4`` stored events, with a few streamed tokens."""
    script: list[dict[str, Any]] = [
        {
            "text": f"step {i}" if i % 10 == 0 else "",
            "tool_calls": [_calc(f"{i} + {k}") for k in range(3)],
        }
        for i in range(steps)
    ]
    script.append({"text": "all steps done"})
    return _scripted(name, script, ["calculator"])


def killable_agent(name: str, *, shell_at: int | None = None) -> dict[str, Any]:
    """Streams tokens and calls the calculator for a long while; with ``shell_at``, that
    step runs a shell command that takes seconds, so a kill lands while it runs."""

    def call(step: int) -> dict[str, Any]:
        if step == shell_at:
            return {"name": "shell", "args": {"command": "sleep 8"}}
        return _calc(f"{step} * 2")

    script = [{"text": f"thinking about step {i} now", "tool_calls": [call(i)]} for i in range(200)]
    return _scripted(name, script, ["calculator", "shell"], token_delay_s=0.004)


def bulky_agent(name: str = "bulky", steps: int = 40) -> dict[str, Any]:
    """Answers of 150 kB each: its viewers' sockets carry megabytes."""
    script: list[dict[str, Any]] = [
        {"text": f"part {i} " + "x" * 150_000, "tool_calls": [_calc(f"{i} + 1")]}
        for i in range(steps)
    ]
    script.append({"text": "all parts done"})
    return _scripted(name, script, ["calculator"])


@pytest.fixture(scope="module")
def live_data(tmp_path_factory: pytest.TempPathFactory, seeded_data: Path) -> Path:
    """The seeded data plus the scripted agents, a browser session and an API token."""
    data = tmp_path_factory.mktemp("live") / "data"
    shutil.copytree(seeded_data, data)
    server = DaphneServer(data, dict(ENV))
    agents = [
        many_events_agent(),
        many_events_agent("some", steps=149),
        killable_agent("killable"),
        killable_agent("in_doubt", shell_at=3),
        bulky_agent(),
    ]
    setup = prepare_live_data(server, "demo", agents)
    (data / "live.json").write_text(json.dumps(setup))
    return data


@pytest.fixture
def studio(tmp_path: Path, live_data: Path) -> Iterator[tuple[DaphneServer, Api, dict[str, Any]]]:
    with daphne_server(tmp_path / "data", ENV, template=live_data) as server:
        setup = json.loads((server.data_dir / "live.json").read_text())
        yield server, Api(server.url, setup["token"]), setup


def viewer(server: DaphneServer, setup: dict[str, Any], session_id: str) -> LiveViewer:
    return LiveViewer(server.ws_url, server.url, setup["cookie"], session_id)


@pytest.mark.timeout(300)
async def test_fifty_viewers_of_a_run_of_two_thousand_events_each_get_every_seq_in_order(
    studio: tuple[DaphneServer, Api, dict[str, Any]],
) -> None:
    server, api, setup = studio
    session_id = api.new_session(setup["agents"]["many"])
    viewers = [viewer(server, setup, session_id) for _ in range(50)]
    sockets = [await v.open() for v in viewers]
    for v, ws in zip(viewers, sockets, strict=True):
        await v.receive(ws, 10)  # the first status: connected and joined
    run = api.send(session_id, "play")
    try:
        await asyncio.gather(
            *(v.watch_until_ended(ws) for v, ws in zip(viewers, sockets, strict=True))
        )
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets))
    stored = api.events(session_id)
    assert [e["seq"] for e in stored] == list(range(1, 2001))
    assert api.ok("GET", f"/api/runs/{run['id']}/")["status"] == "succeeded"
    for v in viewers:
        assert v.seqs == list(range(1, 2001))
        assert (v.duplicates, v.gaps) == ([], [])
    assert viewers[0].events == stored
    assert sum(v.partials for v in viewers) > 0


async def test_random_disconnects_and_resumes_lose_and_duplicate_nothing(
    studio: tuple[DaphneServer, Api, dict[str, Any]],
) -> None:
    server, api, setup = studio
    session_id = api.new_session(setup["agents"]["some"])
    rng = random.Random(5)  # noqa: S311  (kill points, not secrets)
    clients = [viewer(server, setup, session_id) for _ in range(10)]

    async def trials(client: LiveViewer, count: int) -> None:
        for _ in range(count):
            ws = await client.open()
            await client.watch_until(ws, len(client.events) + rng.randint(1, 40))
            if rng.random() < 0.5:
                ws.transport.abort()  # drop the connection without a closing handshake
            else:
                await ws.close()
        ws = await client.open()  # and finally watch to the end
        await client.watch_until_ended(ws)
        await ws.close()

    api.send(session_id, "play")
    await asyncio.gather(*(trials(client, 10) for client in clients))
    stored = api.events(session_id)
    assert len(stored) == 600
    assert sum(client.connections for client in clients) == 110
    for client in clients:
        assert (client.duplicates, client.gaps) == ([], [])
        assert client.events == stored


async def joined(
    server: DaphneServer, setup: dict[str, Any], session_id: str
) -> tuple[LiveViewer, ClientConnection]:
    """A viewer, connected and joined (its first status received)."""
    client = viewer(server, setup, session_id)
    ws = await client.open()
    await client.receive(ws, 10)
    return client, ws


async def frozen_viewer(
    server: DaphneServer, setup: dict[str, Any], session_id: str
) -> ClientConnection:
    """A viewer that stops reading once it joined, as a frozen tab does. Its receive
    buffer is small: what the server sends it soon piles up in Daphne's own buffer."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    client = viewer(server, setup, session_id)
    ws = await client.open(sock)
    await client.receive(ws, 10)  # joined
    ws.transport.pause_reading()
    return ws


def send_close_frame(ws: ClientConnection) -> None:
    """The frozen tab is closed: its close frame reaches the server, which closes the
    websocket but cannot flush its buffer, so the TCP connection stays up while the
    server's next sends to it fail (autobahn's ``Disconnected``)."""
    ws.protocol.send_close(CloseCode.GOING_AWAY)
    ws.transport.write(b"".join(ws.protocol.data_to_send()))


async def output_until(
    server: DaphneServer, start: int, done: Any, within: float = 30.0
) -> list[str]:
    """The server's output lines from ``start`` on, once ``done(lines)``."""
    deadline = asyncio.get_running_loop().time() + within
    while not done(lines := server.output[start:]):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out; last lines: {lines[-10:]}")
        await asyncio.sleep(0.05)
    return lines


@pytest.mark.timeout(300)
async def test_viewers_dropped_mid_send_are_an_info_line_and_the_others_get_every_event(
    tmp_path: Path, live_data: Path
) -> None:
    env = {**ENV, "STUDIO_LIVE_RESYNC_S": "0.1"}  # the resyncs meet the dropped viewers too
    with daphne_server(tmp_path / "data", env, template=live_data) as server:
        setup = json.loads((server.data_dir / "live.json").read_text())
        api = Api(server.url, setup["token"])
        session_id = api.new_session(setup["agents"]["bulky"])
        steady = [await joined(server, setup, session_id) for _ in range(10)]
        aborted = [await joined(server, setup, session_id) for _ in range(5)]
        frozen = [await frozen_viewer(server, setup, session_id) for _ in range(10)]
        start = len(server.output)
        api.send(session_id, "play")

        async def abort_after(client: LiveViewer, ws: ClientConnection, events: int) -> None:
            await client.watch_until(ws, events)
            ws.transport.abort()  # no closing handshake

        # Some 7 MB later, the frozen viewers' buffers on the server are full.
        await asyncio.gather(
            *(abort_after(client, ws, 5 + 10 * i) for i, (client, ws) in enumerate(aborted)),
            *(client.watch_until(ws, 50) for client, ws in steady),
        )
        for ws in frozen:
            send_close_frame(ws)
        await asyncio.gather(*(client.watch_until_ended(ws) for client, ws in steady))
        for ws in frozen:
            ws.transport.abort()
        lines = await output_until(
            server, start, lambda lines: sum("WSDISCONNECT" in line for line in lines) == 15
        )
        for _, ws in steady:
            await ws.close()
        stored = api.events(session_id)

    missed = [line for line in lines if "did not reach a viewer" in line]
    assert missed, "no send met a dropped viewer"
    assert all(line.startswith("INFO studio.consumers ") for line in missed), missed[:3]
    assert any("(Disconnected: " in line for line in missed), missed[:3]
    assert [line for line in lines if line.startswith(("WARNING", "ERROR", "CRITICAL"))] == []
    assert not any("Traceback" in line for line in lines)
    assert stored[-1]["type"] == "agent_end"
    for client, _ in steady:
        assert client.events == stored
        assert (client.duplicates, client.gaps) == ([], [])


async def _kill_trial(
    server: DaphneServer, api: Api, setup: dict[str, Any], rng: random.Random, in_doubt: bool
) -> None:
    session_id = api.new_session(setup["agents"]["in_doubt" if in_doubt else "killable"])
    watcher = viewer(server, setup, session_id)
    ws = await watcher.open()
    await watcher.receive(ws, 10)
    run = api.send(session_id, "go")
    if in_doubt:
        await _watch_until_a_shell_call(watcher, ws)
    else:
        await watcher.watch_until(ws, rng.randint(3, 60))
    server.kill()
    with pytest.raises(ConnectionClosed):
        await _receive_until_closed(watcher, ws)
    server.restart()

    api.wait_for_run(run["id"], ENDED)
    finished = api.ok("GET", f"/api/runs/{run['id']}/")
    assert (finished["status"], finished["error_code"]) == ("interrupted", "interrupted")
    stored = api.events(session_id)
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    by_seq = {e["seq"]: e for e in stored}
    assert all(by_seq.get(e["seq"]) == e for e in watcher.events), "a viewer saw an unstored event"
    assert (stored[0]["type"], stored[0]["parts"][0]["text"]) == ("user_message", "go")
    assert stored[-1]["type"] == "error"
    assert stored[-1]["error"]["code"] == "interrupted"
    assert _unanswered_calls(stored) == set()
    if in_doubt:
        call_id = _shell_calls(watcher.events)[-1]
        [response] = [e for e in stored if _responds_to(e, call_id)]
        assert response["parts"][0]["result"].startswith("in_doubt:")
        assert call_id in stored[-1]["error"]["message"]
    assert api.runs(status="running") == [] and api.runs(status="queued") == []

    resumed = await watcher.open()  # resume across the restart: the rest, exactly once
    await watcher.watch_until_ended(resumed, within=10)
    await resumed.close()
    assert watcher.events == stored
    assert (watcher.duplicates, watcher.gaps) == ([], [])


async def _kill_before_the_runner_starts(
    server: DaphneServer, api: Api, setup: dict[str, Any]
) -> None:
    """Kill the server while its run is claimed and waits for an MCP server that never
    answers: the runner has not started, and the user's message is stored already."""
    with serve_silence() as silence:
        session_id = api.new_session(api.hung_agent("hung", "killable_model", silence.url))
        watcher = viewer(server, setup, session_id)
        ws = await watcher.open()
        await watcher.receive(ws, 10)
        run = api.send(session_id, "are you there?")
        assert await asyncio.to_thread(silence.connected.wait, 30)
        server.kill()
    with pytest.raises(ConnectionClosed):
        await _receive_until_closed(watcher, ws)
    server.restart()

    api.wait_for_run(run["id"], ENDED)
    assert api.run(run["id"])["status"] == "interrupted"
    stored = api.events(session_id)
    assert [(e["seq"], e["type"]) for e in stored] == [(1, "user_message"), (2, "error")]
    user, error = stored
    assert user["parts"][0]["text"] == "are you there?"
    assert error["error"]["code"] == "interrupted"
    resumed = await watcher.open()
    await watcher.watch_until_ended(resumed, within=10)
    await resumed.close()
    assert watcher.events == stored


async def _receive_until_closed(watcher: LiveViewer, ws: Any) -> None:
    async with asyncio.timeout(10):
        while True:
            await watcher.receive(ws, 10)


async def _watch_until_a_shell_call(watcher: LiveViewer, ws: Any) -> None:
    """Until the shell call has started: its ``tool_started`` (the effect journal) is
    stored, so a kill from now on leaves the call in doubt, never "did not run"."""
    async with asyncio.timeout(30):
        while not any(
            event["type"] == "tool_started" and _shell_calls([event]) for event in watcher.events
        ):
            await watcher.receive(ws, 30)


def _shell_calls(events: list[dict[str, Any]]) -> list[str]:
    return [
        part["call_id"]
        for event in events
        for part in event["parts"]
        if part["kind"] == "tool_call" and part["name"] == "shell"
    ]


def _responds_to(event: dict[str, Any], call_id: str) -> bool:
    return any(p["kind"] == "tool_response" and p["call_id"] == call_id for p in event["parts"])


def _unanswered_calls(events: list[dict[str, Any]]) -> set[str]:
    calls = {p["call_id"] for e in events for p in e["parts"] if p["kind"] == "tool_call"}
    answers = {p["call_id"] for e in events for p in e["parts"] if p["kind"] == "tool_response"}
    return calls - answers


@pytest.mark.timeout(300)
async def test_kill_9_mid_run_leaves_every_seen_event_stored_and_the_run_interrupted(
    studio: tuple[DaphneServer, Api, dict[str, Any]],
) -> None:
    server, api, setup = studio
    rng = random.Random(9)  # noqa: S311
    for trial in range(10):
        await _kill_trial(server, api, setup, rng, in_doubt=trial % 3 == 0)
    await _kill_before_the_runner_starts(server, api, setup)
