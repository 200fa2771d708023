"""A real Daphne serving Studio on loopback, for end-to-end tests.

Each server gets its own data directory (SQLite database, secrets, workspaces), is
migrated before it starts, listens on an ephemeral 127.0.0.1 port, and can be killed
(``SIGKILL`` included) and started again on the same data.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_LISTENING = re.compile(r"Listening on TCP address 127\.0\.0\.1:(\d+)")
START_TIMEOUT_S = 30.0
SETTINGS_MODULE = os.environ.get("STUDIO_SERVER_SETTINGS", "studio.settings")
"""The settings of the processes a ``DaphneServer`` starts: under pytest,
``tests.support.settings`` (tests/conftest.py), and in the benchmark scripts that the
smoke tests run (``STUDIO_SERVER_SETTINGS``, tests/support/bench.py)."""
MIGRATED_DB = "STUDIO_TEST_MIGRATED_DB"
"""The environment variable naming an empty, migrated SQLite database that new data
directories start from as a copy (``migrate_data``): migrated once per process, and
handed to the processes it starts (a benchmark script the smoke tests run)."""
DB_FILE = "studio.sqlite3"


@dataclass
class DaphneServer:
    data_dir: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int | None = None
    process: subprocess.Popen[str] | None = None
    output: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": SETTINGS_MODULE,
            "STUDIO_DATA_DIR": str(self.data_dir),
            "STUDIO_DEBUG": "1",
            # Not the model client at each start (~0.7 s of CPU a server, most of which
            # never call it); tests/studio/test_startup_imports.py checks the preload.
            "STUDIO_PRELOAD": "0",
            # The tests' model and MCP servers listen on loopback.
            "STUDIO_OUTBOUND_ALLOWLIST": "127.0.0.0/8,::1,localhost",
            "PYTHONUNBUFFERED": "1",
            **self.env,
        }

    def manage(
        self, *args: str, check: bool = True, env: Mapping[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``manage.py <args>`` against this server's data (``env``: more variables)."""
        return subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env={**self.environment(), **(env or {})},
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
        )

    def start(self) -> DaphneServer:
        """Start Daphne (migrating a new data directory first) and wait until it answers
        ``/healthz``."""
        # With a DATABASE_URL the caller migrates that database, once for all servers.
        if "DATABASE_URL" not in self.env and not (self.data_dir / DB_FILE).exists():
            migrate_data(self)
        self.output = []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port or 0),
                "studio.asgi:application",
            ],
            cwd=ROOT,
            env=self.environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        found = threading.Event()
        threading.Thread(target=self._read_output, args=(found,), daemon=True).start()
        if not found.wait(START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("daphne did not start:\n" + "".join(self.output[-40:]))
        self._wait_healthy()
        return self

    def _read_output(self, found: threading.Event) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line)
            if (match := _LISTENING.search(line)) and not found.is_set():
                self.port = int(match.group(1))
                found.set()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("daphne never answered /healthz:\n" + "".join(self.output[-40:]))

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Stop the process abruptly (``SIGKILL`` by default): no shutdown code runs."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)

    def restart(self) -> DaphneServer:
        """Start again on the same data directory and port."""
        self.stop()
        return self.start()


def prepare_data(data_dir: Path, *commands: tuple[str, ...]) -> Path:
    """Migrate a new data directory and run ``commands`` (``("seed_demo",)``) in it: a
    template that servers copy, so each test does not pay for migrations again."""
    server = DaphneServer(data_dir)
    migrate_data(server)
    for command in commands:
        server.manage(*command)
    return data_dir


def migrate_data(server: DaphneServer) -> None:
    """Give ``server``'s new data directory a migrated database: on SQLite, a copy of
    ``migrated_template()``. Migrating from nothing takes seconds of CPU (85
    migrations' model states), and the suite makes a few dozen data directories; a copy
    is what ``migrate`` would have written."""
    server.data_dir.mkdir(parents=True, exist_ok=True)
    if "DATABASE_URL" in server.environment():
        server.manage("migrate", "--noinput")
        return
    shutil.copyfile(migrated_template(), server.data_dir / DB_FILE)


def inherited_template() -> Path | None:
    """The migrated database this process (or the one that started it) already made
    (``MIGRATED_DB``), if it is still there."""
    template = os.environ.get(MIGRATED_DB)
    return Path(template) if template and Path(template).is_file() else None


def migrated_template() -> Path:
    """An empty SQLite database with every migration applied: migrated once per process
    (or by the one that started it, ``MIGRATED_DB``) and kept until it exits."""
    if (template := inherited_template()) is not None:
        return template
    folder = tempfile.mkdtemp(prefix="studio-migrated-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    blank = DaphneServer(Path(folder) / "data")
    blank.data_dir.mkdir()
    blank.manage("migrate", "--noinput")
    template = blank.data_dir / DB_FILE
    os.environ[MIGRATED_DB] = str(template)
    with closing(sqlite3.connect(template)) as db:  # all of it in the file
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return template


@contextmanager
def daphne_server(
    data_dir: Path, env: Mapping[str, str] | None = None, *, template: Path | None = None
) -> Iterator[DaphneServer]:
    """A started server that is stopped when the block ends; ``template`` is a data
    directory (from ``prepare_data``) to copy rather than migrating afresh."""
    if template is not None:
        shutil.copytree(template, data_dir, dirs_exist_ok=True)
    server = DaphneServer(data_dir, dict(env or {}))
    try:
        yield server.start()
    finally:
        server.stop()
