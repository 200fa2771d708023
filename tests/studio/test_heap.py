"""A server's start-up heap is frozen out of the garbage collector's full collections
(``studio.heap``)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.daphne_server import ROOT


def test_importing_the_server_application_freezes_its_start_up_heap() -> None:
    script = (
        "import gc, studio.asgi; "
        "print(gc.get_freeze_count(), len(gc.get_objects()), gc.isenabled())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "studio.settings", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    frozen, still_walked, collecting = done.stdout.split()
    assert int(frozen) > 50_000  # Django, Channels, LangChain: what start-up imported
    assert int(still_walked) < int(frozen) / 10
    # Automatic collection, off while the application started, is on again.
    assert collecting == "True"
