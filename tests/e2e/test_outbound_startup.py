"""Start-up says what outbound requests may reach: on the embedded default (`make run`'s
runserver, or Daphne) one line says loopback is admitted and how to refuse it; scaled
out, nothing is admitted and nothing is said."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.daphne_server import ROOT, DaphneServer

LINE = (
    "INFO studio.security Outbound model/MCP requests may reach loopback "
    "(127.0.0.0/8, ::1, localhost): embedded default; set STUDIO_OUTBOUND_ALLOWLIST= to refuse"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_up_lines(command: list[str], env: dict[str, str]) -> list[str]:
    """What the server prints until it listens."""
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip())
            if "Listening on TCP address 127.0.0.1:" in line:
                return lines
        raise AssertionError(f"the server stopped before listening: {lines}")
    finally:
        process.terminate()
        process.wait(timeout=10)


def embedded_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A test server's environment without the allowlist it is usually given."""
    env = DaphneServer(tmp_path).environment()
    del env["STUDIO_OUTBOUND_ALLOWLIST"]
    return env | extra


RUNSERVER = [sys.executable, str(ROOT / "manage.py"), "runserver", "--noreload"]
DAPHNE = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", "0", "studio.asgi:application"]


@pytest.mark.parametrize("server", ["runserver", "daphne"])
def test_the_embedded_default_says_at_start_up_that_loopback_is_admitted(
    tmp_path: Path, server: str
) -> None:
    command = [*RUNSERVER, f"127.0.0.1:{free_port()}"] if server == "runserver" else DAPHNE
    lines = start_up_lines(command, embedded_env(tmp_path))
    assert lines.count(LINE) == 1, lines


def test_scaled_out_start_up_admits_and_says_nothing_of_loopback(tmp_path: Path) -> None:
    env = embedded_env(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path / 'scaled.sqlite3'}")
    lines = start_up_lines(DAPHNE, env)
    assert not [line for line in lines if "Outbound" in line], lines
