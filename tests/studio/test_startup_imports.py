"""What a Studio process loads as it starts: not the libraries that only some requests
use. Each of these took from ~60 ms (jsonschema) to ~250 ms (the A2A SDK) of the start-up of
every server, worker and ``manage.py`` command, until they were imported where first
used. A module-level import slipping back in would cost that again, unseen: this test
says which module brought it.

Twisted and Daphne's server (~0.4 s) are for Daphne and ``runserver`` alone; every
other command used to import them with Daphne's app (``studio.conf.runserver_apps``).
That ``runserver`` is still Daphne's is tests/e2e/test_outbound_startup.py's to see."""

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


def last_line(data: Path, *args: str) -> str:
    """What ``python <args>`` printed last, run in a new process on ``data``."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "studio.settings",
            "STUDIO_DATA_DIR": str(data),
        },
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.splitlines()[-1]


def test_a_server_starts_without_the_libraries_only_some_requests_use(tmp_path: Path) -> None:
    loaded = set(json.loads(last_line(tmp_path, "-c", START)))
    assert "django" in loaded and "agents_core" in loaded  # it did start
    early = {name: where for name, where in ON_FIRST_USE.items() if name in loaded}
    assert not early, f"imported at start-up, instead of in {early}"


def test_a_command_other_than_runserver_loads_no_web_server(tmp_path: Path) -> None:
    script = "import sys; print(sorted({'daphne', 'twisted', 'autobahn'} & set(sys.modules)))"
    assert last_line(tmp_path, "manage.py", "shell", "-c", script) == "[]"
