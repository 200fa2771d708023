"""The jail behind the filesystem tools: model-given paths mapped into one root.

Every path the model gives is resolved one component at a time from the root: ``..``
may not climb above the root, and each symlink met on the way must resolve inside the
root; the result is checked once more with path semantics (``Path.is_relative_to``,
never a string prefix). Absolute paths are accepted only when they lie inside the
root. Names are taken literally: ``%2e%2e`` or ``~`` are file names, never decoded.
Files are opened with ``O_NOFOLLOW``, so a symlink swapped in after the check is
refused. Walks skip (and report) symlinks that leave the root, are broken or loop, and
never descend into symlinked directories, so they cannot loop. Errors name only the
path the model gave, never what lies outside the root.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agents_core.exceptions import ToolArgumentsError, ToolExecutionError


class PathEscapeError(ToolExecutionError):
    """A path that would leave the filesystem root (directly, or through a symlink)."""

    code = "path_escape"


@dataclass(frozen=True, slots=True)
class Entry:
    parts: tuple[str, ...]
    """The path below the walk's base, as named (through symlinks, if any)."""
    real: Path
    is_dir: bool
    link: bool = False


class Jail:
    """Maps model-given paths to real paths inside ``root``, or refuses them."""

    __slots__ = ("configured", "root")

    def __init__(self, configured: Path) -> None:
        self.configured = configured
        self.root = Path(os.path.realpath(configured))

    def resolve(self, raw: str) -> Path:
        """The real path ``raw`` names; it may not exist yet, but it is inside the root."""
        if "\x00" in raw:
            raise ToolArgumentsError("path contains a NUL byte")
        current = self.root
        for part in self._parts(raw):
            if part == "..":
                if current == self.root:
                    raise _escape(raw)
                current = current.parent
            elif part not in ("", "."):
                current = self._step(current / part, raw)
        final = Path(os.path.realpath(current))
        if not final.is_relative_to(self.root):
            raise _escape(raw)
        return final

    def follow(self, link: Path, shown: str) -> Path:
        """Where the symlink ``link`` leads, if that is inside the root."""
        try:
            target = Path(os.path.realpath(link, strict=True))
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ToolExecutionError(f"{shown!r}: symlink loop") from exc
            target = Path(os.path.realpath(link))  # broken: judge where it would lead
        if not target.is_relative_to(self.root):
            raise _escape(shown)
        return target

    def show(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix()

    def _parts(self, raw: str) -> tuple[str, ...]:
        path = PurePosixPath(raw)
        if not path.is_absolute():
            return path.parts
        for base in (self.root, self.configured):
            if path.is_relative_to(base):
                return path.relative_to(base).parts
        raise _escape(raw)

    def _step(self, candidate: Path, raw: str) -> Path:
        try:
            mode = os.lstat(candidate).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return candidate  # does not exist (yet): the operation decides
        except OSError as exc:
            raise ToolExecutionError(f"{raw!r}: {exc.strerror}") from exc
        return self.follow(candidate, raw) if stat.S_ISLNK(mode) else candidate


def _escape(raw: str) -> PathEscapeError:
    return PathEscapeError(f"{raw!r} is outside the filesystem root")


@dataclass(slots=True)
class Walk:
    """A depth-first walk that stays in the root and records what it skipped. Like
    ``find``, it lists symlinked directories but does not descend into them, so links
    cannot make it loop or list a file twice."""

    jail: Jail
    budget: int
    truncated: bool = False
    skipped: list[str] = field(default_factory=list)

    def entries(self, base: Path, max_depth: int | None) -> Iterator[Entry]:
        stack: list[tuple[Path, tuple[str, ...]]] = [(base, ())]
        while stack:
            directory, parts = stack.pop()
            below: list[tuple[Path, tuple[str, ...]]] = []
            for entry in self._scan(directory, parts):
                yield entry
                deeper = max_depth is None or len(entry.parts) < max_depth
                if entry.is_dir and not entry.link and deeper:
                    below.append((entry.real, entry.parts))
            stack.extend(reversed(below))

    def _scan(self, directory: Path, parts: tuple[str, ...]) -> Iterator[Entry]:
        shown = self.jail.show(directory) + "/"
        try:
            with os.scandir(directory) as scan:
                names = sorted(entry.name for entry in scan)
        except OSError as exc:
            self.skipped.append(f"{shown}: {exc.strerror}")
            return
        for name in names:
            self.budget -= 1
            if self.budget < 0:
                self.truncated = True
                return
            entry = self._entry(directory / name, (*parts, name))
            if entry is not None:
                yield entry

    def _entry(self, path: Path, parts: tuple[str, ...]) -> Entry | None:
        try:
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode):
                return Entry(parts, path, stat.S_ISDIR(mode))
            shown = self.jail.show(path)
            real = self.jail.follow(path, shown)
            return Entry(parts, real, real.is_dir(), link=True)
        except PathEscapeError:
            self.skipped.append(f"{self.jail.show(path)}: symlink leaves the root, not followed")
        except ToolExecutionError:
            self.skipped.append(f"{self.jail.show(path)}: symlink loop, not followed")
        except OSError as exc:
            self.skipped.append(f"{self.jail.show(path)}: {exc.strerror}")
        return None


def os_error(shown: str, exc: OSError) -> ToolExecutionError:
    return ToolExecutionError(f"{shown!r}: {exc.strerror or type(exc).__name__}")


def open_file(path: Path, flags: int, shown: str) -> int:
    """A descriptor of the regular file at ``path``; never follows a symlink, never
    blocks on a FIFO."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolExecutionError(f"{shown!r} is not a regular file")
    return fd


def read_bytes(path: Path, shown: str, offset: int, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes from ``offset``, and the file's size."""
    try:
        fd = open_file(path, os.O_RDONLY, shown)
    except OSError as exc:
        raise os_error(shown, exc) from exc
    try:
        return os.pread(fd, limit, offset), os.fstat(fd).st_size
    finally:
        os.close(fd)


def write_bytes(path: Path, shown: str, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_file(path, os.O_WRONLY | os.O_CREAT, shown)
    except OSError as exc:
        raise os_error(shown, exc) from exc
    with os.fdopen(fd, "wb") as file:
        file.truncate()
        file.write(data)
