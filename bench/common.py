"""What every benchmark script shares: the JSON line it prints, its command line, and
small statistics helpers.

A script prints one JSON object per measurement on stdout (and nothing else there):
``name``, ``value``, ``unit``, ``target`` (a readable goal, or ``null`` when the issue
sets none), ``met`` (``true``/``false``, ``null`` without a target) and ``details``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.support.daphne_server import DB_FILE, inherited_template


@dataclass(frozen=True, slots=True)
class Measurement:
    name: str
    value: float
    unit: str
    target: str | None = None
    met: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)


def emit(measurement: Measurement) -> None:
    print(json.dumps(asdict(measurement)), flush=True)


def log(message: str) -> None:
    """Progress for the person running the bench; stdout is kept for results."""
    print(message, file=sys.stderr, flush=True)


def parser(description: str | None) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=(description or "").strip().splitlines()[0])


def add_backend_args(args: argparse.ArgumentParser, backends: Sequence[str]) -> None:
    """``--backend`` (one of ``backends``, or ``all``) and the PostgreSQL server to use."""
    args.add_argument("--backend", choices=[*backends, "all"], default="all")
    args.add_argument("--pg-host", default="127.0.0.1")
    args.add_argument("--pg-port", type=int, default=5432)
    args.add_argument("--pg-users", default="postgres,root", help="tried in order")


def each_backend(module: str, backends: Sequence[str], chosen: str) -> bool:
    """With ``--backend all``, run ``module`` again once per backend, each in a process
    of its own (Django configures one database per process); True when it did."""
    if chosen != "all":
        return False
    for backend in backends:
        # What the previous backend wrote is flushed first, so that its dirty pages do
        # not go to disk during the next one's measurement (PostgreSQL's durable commits
        # wait for their own flush, and shared the disk with SQLite's write-back).
        os.sync()
        child = [sys.executable, "-m", module, *sys.argv[1:], "--backend", backend]
        subprocess.run(child, check=True)  # noqa: S603 (this script, re-run)
    return True


def migrated_django(data_dir: Path, database_url: str | None) -> None:
    """Set Django up (on ``DJANGO_SETTINGS_MODULE``, ``studio.settings`` if unset) as a
    deployment would: the embedded default (SQLite in ``data_dir``, the secrets there
    too) or ``database_url``; then create the schema.

    A SQLite database starts as a copy of the migrated one that the process which
    started this script made, if there is one (``MIGRATED_DB``: the tests' smoke runs
    do), so ``migrate`` finds nothing to apply (~4 s of CPU less). Run alone, a script
    migrates its own."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    os.environ["STUDIO_DATA_DIR"] = str(data_dir)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
        if (template := inherited_template()) is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(template, data_dir / DB_FILE)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def peak_rss_mib() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rounded(value: float, digits: int = 1) -> float:
    return round(value, digits)
