"""``--cpu-report`` (tests/support/cpu_report.py) charges each test file the CPU it used,
its child processes' included, alone and under pytest-xdist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BURNER = """
import subprocess, sys

def test_burns_a_child_process():
    work = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.5: pass"
    subprocess.run([sys.executable, "-c", work], check=True)
"""
LINE = re.compile(r"^\s*([\d.]+)s\s+[\d.]+%\s+(\S+)$", re.MULTILINE)


def run_pytest(folder: Path, *options: str) -> str:
    """The output of this interpreter's pytest, with the report's plugin, on ``folder``.
    Only the plugins named are loaded: the installed ones (Django's, schemathesis',
    Playwright's...) took each run seconds of CPU, for nothing this test uses."""
    plugins = ["-p", "tests.support.cpu_report", "-p", "xdist", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, *options, str(folder)],
        cwd=ROOT,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    return done.stdout


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_file_whose_child_burned_cpu_comes_first(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_burner.py").write_text(BURNER)
    (tmp_path / "test_idle.py").write_text("def test_idle():\n    pass\n")

    output = run_pytest(tmp_path, *workers, "--cpu-report=5")

    ranked = [(Path(path).name, float(seconds)) for seconds, path in LINE.findall(output)]
    assert [name for name, _ in ranked] == ["test_burner.py", "test_idle.py"], output
    assert ranked[0][1] >= 0.45  # the child's half second, counted once it was waited for
    assert ranked[1][1] < 0.45
    assert "2 files" in output


def test_without_the_option_nothing_is_reported(tmp_path: Path) -> None:
    (tmp_path / "test_idle.py").write_text("def test_idle():\n    pass\n")

    assert "by CPU used" not in run_pytest(tmp_path)
