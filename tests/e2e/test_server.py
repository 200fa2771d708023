"""The real server: Daphne serves Studio over HTTP on loopback and survives a restart."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request

import pytest

from tests.support.daphne_server import ROOT, DaphneServer


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def test_daphne_serves_the_health_check_and_the_sign_in_page(server: DaphneServer) -> None:
    status, body = get(f"{server.url}/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    status, body = get(f"{server.url}/accounts/login/")
    assert status == 200
    assert b"Sign in" in body


def test_a_killed_server_restarts_on_the_same_data(server: DaphneServer) -> None:
    token_before = server.manage(
        "shell", "-c", "from django.contrib.auth.models import User; print(User.objects.count())"
    ).stdout
    server.kill()
    server.restart()
    token_after = server.manage(
        "shell", "-c", "from django.contrib.auth.models import User; print(User.objects.count())"
    ).stdout
    assert token_before == token_after != ""
    status, _ = get(f"{server.url}/healthz")
    assert status == 200


@pytest.mark.parametrize("reloads", [False, True], ids=["noreload", "autoreload"])
def test_the_development_server_logs_each_request_and_start_up_line_once(
    server: DaphneServer, reloads: bool
) -> None:
    """``make run`` serves with ``runserver``, whose lines go through the "django"
    logger: once, not once per handler. With the autoreloader (as ``make run`` has it),
    its parent process watches the files and says so once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, str(ROOT / "manage.py"), "runserver", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        command if reloads else [*command, "--noreload"],
        env=server.environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the reloader's child is in this group, and ends with it
    )
    try:
        lines = _lines_until(process, f"Listening on TCP address 127.0.0.1:{port}")
        get(f"http://127.0.0.1:{port}/healthz")
        lines += _lines_until(process, "/healthz")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    assert process.stdout is not None
    lines += process.stdout.read().splitlines()
    requests = [line for line in lines if "GET /healthz" in line]
    starts = [line for line in lines if "Starting ASGI/Daphne" in line]
    watching = [line for line in lines if "Watching for file changes" in line]
    assert (len(requests), len(starts), len(watching)) == (1, 1, int(reloads)), lines


def _lines_until(process: subprocess.Popen[str], marker: str) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if marker in line:
            return lines
    raise AssertionError(f"the server stopped before {marker!r}: {lines}")
