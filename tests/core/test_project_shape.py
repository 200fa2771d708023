"""The shape the code keeps (``docs/architecture.md``): no module grows past about 400
lines before it is split. The layers and the absence of import cycles are import-linter
contracts (``pyproject.toml``), and function complexity is ruff's C901, all run by
``make test``."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 420
"""About 400: a module this long has more than one reason to change."""


def _modules() -> list[Path]:
    packages = [ROOT / "agents_core", ROOT / "studio"]
    return sorted(
        path
        for package in packages
        for path in package.rglob("*.py")
        if "migrations" not in path.parts
    )


def test_the_packages_have_modules_to_check() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in _modules()}
    assert {"agents_core/runner.py", "studio/runs/records.py", "studio/live/protocol.py"} <= names


def test_no_module_is_over_about_four_hundred_lines() -> None:
    long = {
        path.relative_to(ROOT).as_posix(): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these modules: {long}"
