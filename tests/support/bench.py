"""Running a benchmark script (``bench/``) the way ``bench.run_all`` does, for the smoke
tests: they prove each script still runs and reports, never how fast anything is. The
servers a script starts use the tests' settings (tests/support/settings.py: fast
password hashing, static files gzipped only), as every server under pytest does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import daphne_server

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"name", "value", "unit", "target", "met", "details"}


def run_bench(module: str, *args: str, timeout_s: float = 100) -> list[dict[str, Any]]:
    """The measurements ``python -m bench.<module> <args>`` printed; each one has every
    field of the JSON line format and renders as a README table row."""
    from bench.run_all import row

    settings = {"STUDIO_SERVER_SETTINGS": daphne_server.SETTINGS_MODULE}
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
        env={**os.environ, **settings},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert results, done.stderr[-4000:]
    for result in results:
        assert set(result) == FIELDS
        assert result["name"].startswith(f"{module}.")
        assert (result["met"] is None) == (result["target"] is None)
        assert row(result).startswith(f"| `{result['name']}` |")
    return results
