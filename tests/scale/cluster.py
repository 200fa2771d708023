"""A scaled-out Studio on loopback: a throwaway PostgreSQL database, a dedicated Redis
database number, Daphne servers and ``run_worker`` processes, plus the clients the
tests drive it with (REST over urllib with a token, websockets with a session cookie).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis
from cryptography.fernet import Fernet
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from tests.scale.redis_proxy import RedisProxy, proxy_to, through
from tests.support.daphne_server import ROOT, DaphneServer
from tests.support.live_client import ENDED, Api, prepare_live_data

SCALE_REDIS_DB = 14
"""The Redis database the servers and workers under test share; flushed per module.
``SCALE_REDIS_DB`` in the environment picks another, so that test runs sharing one Redis
server (several checkouts on one machine) do not flush each other's. Under pytest-xdist
each worker takes databases of its own below it (``worker_redis_databases``)."""


def worker_redis_databases(worker: str | None, base: int) -> tuple[int, int]:
    """The Redis databases (the clusters', the load scenario's) of pytest-xdist worker
    ``worker`` (``gw0``, ``gw1``...; ``None`` outside xdist): two a worker, counting down
    from ``base``. Every test of a worker runs after the last one ended, so the
    worker's tests share its two; two workers' never meet."""
    number = int(worker.removeprefix("gw")) if worker else 0
    scale = base - 2 * number
    if scale - 1 < 0:
        raise ValueError(f"no Redis databases left for xdist worker {worker} below {base}")
    return scale, scale - 1


def database_url() -> str:
    return os.environ.get("DATABASE_URL", "")


def redis_url() -> str:
    return os.environ.get("REDIS_URL", "")


def with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


_template: str | None = None


def migrated_template() -> str:
    """A PostgreSQL database with Studio's migrations applied, made on first use and
    dropped when the process exits: throwaway databases are copies of it, so each module
    does not pay for the migrations again (seconds each on PostgreSQL)."""
    global _template
    if _template is None:
        name = f"studio_scale_template_{uuid.uuid4().hex[:12]}"
        admin = with_path(database_url(), "/postgres")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        atexit.register(_drop, name)
        url = with_path(database_url(), f"/{name}")
        migrator = DaphneServer(
            Path(tempfile.mkdtemp(prefix="scale-template-")), {"DATABASE_URL": url}
        )
        migrator.manage("migrate", "--noinput")
        _template = name
    return _template


def _drop(name: str) -> None:
    with psycopg.connect(with_path(database_url(), "/postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def throwaway_database(*, migrated: bool = False) -> Iterator[str]:
    """A new PostgreSQL database on DATABASE_URL's server, dropped afterwards: empty, or
    ``migrated`` (a copy of ``migrated_template()``)."""
    name = f"studio_scale_{uuid.uuid4().hex[:12]}"
    template = f' TEMPLATE "{migrated_template()}"' if migrated else ""
    admin = with_path(database_url(), "/postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{template}')
    try:
        yield with_path(database_url(), f"/{name}")
    finally:
        _drop(name)


def scale_redis_url() -> str:
    return with_path(redis_url(), f"/{os.environ.get('SCALE_REDIS_DB', SCALE_REDIS_DB)}")


def prepare(server: DaphneServer, agents: list[dict[str, Any]]) -> dict[str, Any]:
    """Create a user with ``agents`` (``{"spec", "options"}`` each, on a scripted model
    of its own), a signed-in browser session and an API token, in the server's database
    (migrated: ``throwaway_database(migrated=True)``)."""
    server.data_dir.mkdir(parents=True, exist_ok=True)
    return prepare_live_data(server, "scale", agents)


@dataclass
class Worker:
    """A ``manage.py run_worker`` process."""

    env: dict[str, str]
    command: tuple[str, ...] = (str(ROOT / "manage.py"), "run_worker")
    """What ``python`` runs: ``run_worker``, or a wrapper of it (``bench.load``)."""
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)

    def start(self, within: float = 30.0) -> Worker:
        self.process = subprocess.Popen(
            [sys.executable, *self.command],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started = threading.Event()
        threading.Thread(target=self._read, args=(started,), daemon=True).start()
        if not started.wait(within):
            self.stop()
            raise RuntimeError("the worker did not start:\n" + "".join(self.output[-40:]))
        return self

    def _read(self, started: threading.Event) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            if "worker " in line and " started" in line:
                started.set()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def executor_of(db_url: str, run_id: str) -> str:
    """``Run.owner_process`` of ``run_id``: ``host:pid:nonce`` while it executes."""
    with psycopg.connect(db_url) as conn:
        row = conn.execute("SELECT owner_process FROM studio_run WHERE id = %s", (run_id,))
        found = row.fetchone()
    return str(found[0]) if found else ""


def task_of(db_url: str, run_id: str) -> tuple[str, str]:
    """(status, exception class) of the tasks framework's record of ``run_id``'s task."""
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT status, exception_class_path FROM django_tasks_database_dbtaskresult"
            " WHERE args_kwargs -> 'kwargs' ->> 'run_id' = %s",
            (run_id,),
        )
        found = row.fetchone()
    return (str(found[0]), str(found[1])) if found else ("", "")


def wait_until(check: Any, within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        time.sleep(0.05)


@dataclass
class Viewer:
    """One websocket viewer of a session. ``events`` are the stored events it received;
    ``breaches`` records every seq that arrived twice or out of order; ``calls_shown``
    the partial events without parts (a model call slow to answer showing itself)."""

    server: DaphneServer
    cookie: str
    session_id: str
    events: list[dict[str, Any]] = field(default_factory=list)
    breaches: list[tuple[int, int]] = field(default_factory=list)
    calls_shown: list[dict[str, Any]] = field(default_factory=list)
    status: dict[str, Any] | None = None
    ws: ClientConnection | None = None
    reconnects: int = 0

    @property
    def last_seq(self) -> int:
        return int(self.events[-1]["seq"]) if self.events else 0

    @property
    def ended(self) -> bool:
        return self.status is not None and (self.status.get("run") or {}).get("status") in ENDED

    async def open(self, attempts: int = 8) -> None:
        """Connect (resuming after the last seq received) and wait for the first status
        frame: the viewer joined the group. Retries like the page's timeline does."""
        for attempt in range(attempts):
            try:
                await self._connect()
                return
            except (OSError, InvalidHandshake, ConnectionClosed, TimeoutError):
                if attempt == attempts - 1:
                    raise
                self.reconnects += 1
                await asyncio.sleep(min(0.2 * 2**attempt, 3.0))  # backoff, as the page's client

    async def _connect(self) -> None:
        self.status = None
        self.ws = await connect(
            f"{self.server.ws_url}/ws/sessions/{self.session_id}/?after={self.last_seq}",
            origin=self.server.url,  # type: ignore[arg-type]
            additional_headers={"Cookie": f"sessionid={self.cookie}"},
            max_size=2**24,
            open_timeout=15,
        )
        while self.status is None:
            await self.receive(15)

    async def receive(self, within: float) -> None:
        assert self.ws is not None
        async with asyncio.timeout(within):
            frame = json.loads(await self.ws.recv())
        if frame["type"] == "status":
            self.status = frame
        elif frame["type"] == "event" and not frame["event"]["partial"]:
            seq = frame["event"]["seq"]
            if seq != self.last_seq + 1:
                self.breaches.append((self.last_seq, seq))
            if seq > self.last_seq:
                self.events.append(frame["event"])
        elif frame["type"] == "event" and not frame["event"]["parts"]:
            self.calls_shown.append(frame["event"])

    async def watch_until(self, done: Any, within: float) -> None:
        """Receive until ``done(self)``, reconnecting (from the last seq) when the server
        drops the socket."""
        deadline = time.monotonic() + within
        while not done(self):
            try:
                await self.receive(deadline - time.monotonic())
            except ConnectionClosed:
                self.reconnects += 1
                await self.open()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()


# A cluster: servers and a worker on one throwaway database

LIMITS = {"max_steps": 1000, "max_model_calls": 1000, "max_tool_calls": 2000}


def scripted_agent(name: str, steps: int, token_delay_s: float) -> dict[str, Any]:
    """An agent whose model plays ``steps`` steps of text and one calculator call each:
    two stored events a step."""
    script: list[dict[str, Any]] = [
        {
            "text": f"step-{i}",
            "tool_calls": [{"name": "calculator", "args": {"expression": f"{i} * 2"}}],
        }
        for i in range(steps)
    ]
    script.append({"text": "all done"})
    return {
        "spec": {
            "name": name,
            "model": f"{name}_model",
            "instruction": "Play the script.",
            "tools": [{"name": "calculator"}],
            "max_iterations": 1000,
            "limits": LIMITS,
        },
        "options": {"script": script, "loop": False, "token_delay_s": token_delay_s},
    }


def careful_agent(name: str) -> dict[str, Any]:
    """An agent whose one calculator call waits for a person's approval."""
    script = [
        {
            "text": "let me check",
            "tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}],
        },
        {"text": "the answer is 42"},
    ]
    return {
        "spec": {
            "name": name,
            "model": f"{name}_model",
            "instruction": "Play the script.",
            "tools": [{"name": "calculator", "requires_approval": True}],
            "limits": LIMITS,
        },
        "options": {"script": script, "loop": False},
    }


@dataclass
class Cluster:
    env: dict[str, str]
    servers: list[DaphneServer]
    setup: dict[str, Any]
    proxy: RedisProxy | None = None
    """What the cluster's processes reach Redis through, when it was started with one."""
    current: Worker | None = None
    workers: list[Worker] = field(default_factory=list)

    @property
    def database_url(self) -> str:
        return self.env["DATABASE_URL"]

    def api(self, server: int) -> Api:
        return Api(self.servers[server].url, self.setup["token"])

    def viewers(self, session_id: str, count: int) -> list[Viewer]:
        """``count`` viewers, alternately on each server."""
        servers = self.servers
        cookie = self.setup["cookie"]
        return [Viewer(servers[i % len(servers)], cookie, session_id) for i in range(count)]

    def new_worker(self) -> Worker:
        self.current = Worker({**self.servers[0].environment()})
        self.workers.append(self.current)
        return self.current.start()

    def print_output(self) -> None:
        """The processes' last lines (pytest shows them when a test failed)."""
        for name, output in [
            *((f"server {i}", server.output) for i, server in enumerate(self.servers)),
            *((f"worker {i}", worker.output) for i, worker in enumerate(self.workers)),
        ]:
            print(f"--- {name} (last 60 lines)\n{''.join(output[-60:])}")

    def worker(self) -> Worker:
        """The running worker, started if there is none (a test killed it)."""
        current = self.current
        alive = current is not None and current.process is not None
        if alive and current.process.poll() is None:  # type: ignore[union-attr]
            return current  # type: ignore[return-value]
        return self.new_worker()


@contextmanager
def start_cluster(
    data: Path,
    agents: list[dict[str, Any]],
    *,
    servers: int,
    lease_s: float,
    extra_env: dict[str, str] | None = None,
    through_proxy: bool = False,
) -> Iterator[Cluster]:
    """``servers`` Daphnes (no worker yet: ``Cluster.worker`` starts one) on a throwaway
    database and the scale Redis database (flushed), with ``agents`` set up;
    ``extra_env`` for every process. ``through_proxy``: every process reaches Redis
    through a ``RedisProxy`` of the cluster's own (``Cluster.proxy``)."""
    redis.Redis.from_url(scale_redis_url()).flushdb()
    proxy = proxy_to(scale_redis_url()) if through_proxy else None
    with contextlib.ExitStack() as cleanup, throwaway_database(migrated=True) as db_url:
        if proxy:
            cleanup.callback(proxy.close)
        env = {
            "DATABASE_URL": db_url,
            "REDIS_URL": through(proxy, scale_redis_url()) if proxy else scale_redis_url(),
            "STUDIO_RUN_EXECUTION": "worker",
            # Every process of a deployment shares these.
            "STUDIO_SECRET_KEY": "scale-tests-only-secret-key",
            "STUDIO_FIELD_ENCRYPTION_KEYS": Fernet.generate_key().decode(),
            "STUDIO_RUN_LEASE_S": str(lease_s),
            "STUDIO_LIVE_RESYNC_S": "0.5",
            "STUDIO_MAX_CONCURRENT_RUNS_PER_USER": "50",
            **(extra_env or {}),
        }
        setup = prepare(DaphneServer(data, dict(env)), agents)
        started = Cluster(
            env, [DaphneServer(data, dict(env)) for _ in range(servers)], setup, proxy
        )
        try:
            with ThreadPoolExecutor(servers) as pool:  # each process takes seconds to start
                for future in [pool.submit(server.start) for server in started.servers]:
                    future.result()
            yield started
        finally:
            for worker in started.workers:
                worker.stop()
            for server in started.servers:
                server.stop()


def assert_every_seq_in_order(viewers: list[Viewer], stored: list[dict[str, Any]]) -> None:
    expected = [(event["seq"], event["id"]) for event in stored]
    assert [event["seq"] for event in stored] == list(range(1, len(stored) + 1))
    for viewer in viewers:
        assert viewer.breaches == []
        assert [(event["seq"], event["id"]) for event in viewer.events] == expected


async def watch_all(viewers: list[Viewer], done: Any, within: float) -> None:
    await asyncio.gather(*(viewer.watch_until(done, within) for viewer in viewers))
