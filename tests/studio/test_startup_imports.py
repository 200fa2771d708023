"""What a Studio process loads as it starts: not the libraries that only some requests
use. Each of these took from ~60 ms (jsonschema) to ~250 ms (the A2A SDK) of the start-up of
every server, worker and ``manage.py`` command, until they were imported where first
used. A module-level import slipping back in would cost that again, unseen: this test
says which module brought it.

Twisted and Daphne's server (~0.4 s) are for Daphne and ``runserver`` alone; every
other command used to import them with Daphne's app (``studio.conf.runserver_apps``).
That ``runserver`` is still Daphne's is tests/e2e/test_outbound_startup.py's to see.

A server that executes runs (inline execution) imports the model client as it starts
(``STUDIO_PRELOAD``, ``studio.runs.preload``), so that its first run does not pay for
it; it is the one library it loads ahead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.daphne_server import ROOT

ON_FIRST_USE = {
    "a2a": "studio.services.remote_agents.refresh_card (a remote agent's card)",
    "httpx": "studio.checked_http.httpx_transports (Ollama, A2A)",
    "jsonschema": "agents_core.structured, studio.services.approvals (a JSON Schema)",
}
START = """
import json, sys
import django
django.setup()
import studio.asgi  # the server's application, with the admin, API and websockets
from django.urls import get_resolver
get_resolver().url_patterns  # every view module
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules})))
"""


def last_line(data: Path, *args: str, **env: str) -> str:
    """What ``python <args>`` printed last, run in a new process on ``data`` (``env``: more
    variables)."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "studio.settings",
            "STUDIO_DATA_DIR": str(data),
            **env,
        },
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.splitlines()[-1]


def test_a_server_starts_without_the_libraries_only_some_requests_use(tmp_path: Path) -> None:
    loaded = set(json.loads(last_line(tmp_path, "-c", START, STUDIO_PRELOAD="0")))
    assert "django" in loaded and "agents_core" in loaded  # it did start
    early = {name: where for name, where in ON_FIRST_USE.items() if name in loaded}
    assert not early, f"imported at start-up, instead of in {early}"
    assert "openai" not in loaded and "langchain_openai" not in loaded


def test_a_server_that_executes_runs_imports_the_model_client_ahead_and_only_it(
    tmp_path: Path,
) -> None:
    loaded = set(json.loads(last_line(tmp_path, "-c", START)))
    assert {"openai", "langchain_openai"} <= loaded  # preloaded: not in its first run
    early = {name: where for name, where in ON_FIRST_USE.items() if name in loaded}
    assert not early, f"imported at start-up, instead of in {early}"
    assert "mcp" not in loaded  # the tools' libraries: only runs that use them


def test_a_server_whose_runs_execute_in_workers_preloads_nothing(tmp_path: Path) -> None:
    worker = {"STUDIO_RUN_EXECUTION": "worker", "REDIS_URL": "redis://127.0.0.1:6379/13"}
    loaded = set(json.loads(last_line(tmp_path, "-c", START, **worker)))
    assert "django" in loaded and "openai" not in loaded


def test_a_command_other_than_runserver_loads_no_web_server(tmp_path: Path) -> None:
    script = "import sys; print(sorted({'daphne', 'twisted', 'autobahn'} & set(sys.modules)))"
    assert last_line(tmp_path, "manage.py", "shell", "-c", script) == "[]"
