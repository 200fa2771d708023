"""Filesystem tools jailed to one root directory: ls, read, write, edit, glob, grep, mkdir.

Every path the model gives is resolved one component at a time from the root: ``..``
may not climb above the root, and each symlink met on the way must resolve inside the
root; the result is checked once more with path semantics (``Path.is_relative_to``,
never a string prefix). Absolute paths are accepted only when they lie inside the
root. Names are taken literally: ``%2e%2e`` or ``~`` are file names, never decoded.
Files are opened with ``O_NOFOLLOW``, so a symlink swapped in after the check is
refused. ``ls``, ``glob`` and ``grep`` skip (and report) symlinks that leave the root,
are broken or loop, and never descend into symlinked directories, so they cannot loop.
Errors name only the path the model gave, never what lies outside the root.
"""

from __future__ import annotations

import asyncio
import errno
import os
import re
import stat
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator

from agents_core.exceptions import ConfigurationError, ToolArgumentsError, ToolExecutionError
from agents_core.tools.base import BaseTool, ToolContext, args_schema, parse_args

TRUNCATION_MARKER = "[... truncated]"
_MAGIC = frozenset("*?[")
_GREP_LINE_CHARS = 400


class PathEscapeError(ToolExecutionError):
    """A path that would leave the filesystem root (directly, or through a symlink)."""

    code = "path_escape"


class FilesystemSettings(BaseModel):
    """Configuration of the filesystem tools; serialisable, so specs can carry it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    root: Path
    """The directory the tools are jailed to; must be absolute."""
    max_read_bytes: PositiveInt = 256_000
    """Most bytes one ``read`` returns, and most bytes ``grep`` searches per file."""
    max_write_bytes: PositiveInt = 1_000_000
    """Largest file ``write`` and ``edit`` may produce."""
    max_results: PositiveInt = 200
    """Most entries ``ls`` and ``glob`` list, and most lines ``grep`` returns."""
    max_scan_entries: PositiveInt = 50_000
    """Most directory entries one ``glob`` or ``grep`` call visits."""
    read_only: bool = False
    """Leave out ``write``, ``edit`` and ``mkdir``."""

    @field_validator("root")
    @classmethod
    def _root_is_absolute(cls, root: Path) -> Path:
        if not root.is_absolute():
            raise ValueError("root must be an absolute path")
        return root


class PathListing(BaseModel):
    """What ``ls`` and ``glob`` return: root-relative paths, directories ending in ``/``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: list[str]
    truncated: bool = False
    skipped: list[str] = Field(default_factory=list)
    """Entries not followed, with the reason (never where a symlink points)."""


class GrepMatches(BaseModel):
    """What ``grep`` returns: ``path:line: text`` for each matching line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    matches: list[str]
    truncated: bool = False
    skipped: list[str] = Field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Entry:
    parts: tuple[str, ...]
    """The path below the walk's base, as named (through symlinks, if any)."""
    real: Path
    is_dir: bool
    link: bool = False


class _Jail:
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
class _Walk:
    """A depth-first walk that stays in the root and records what it skipped. Like
    ``find``, it lists symlinked directories but does not descend into them, so links
    cannot make it loop or list a file twice."""

    jail: _Jail
    budget: int
    truncated: bool = False
    skipped: list[str] = field(default_factory=list)

    def entries(self, base: Path, max_depth: int | None) -> Iterator[_Entry]:
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

    def _scan(self, directory: Path, parts: tuple[str, ...]) -> Iterator[_Entry]:
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

    def _entry(self, path: Path, parts: tuple[str, ...]) -> _Entry | None:
        try:
            mode = os.lstat(path).st_mode
            if not stat.S_ISLNK(mode):
                return _Entry(parts, path, stat.S_ISDIR(mode))
            shown = self.jail.show(path)
            real = self.jail.follow(path, shown)
            return _Entry(parts, real, real.is_dir(), link=True)
        except PathEscapeError:
            self.skipped.append(f"{self.jail.show(path)}: symlink leaves the root, not followed")
        except ToolExecutionError:
            self.skipped.append(f"{self.jail.show(path)}: symlink loop, not followed")
        except OSError as exc:
            self.skipped.append(f"{self.jail.show(path)}: {exc.strerror}")
        return None


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _FilesystemTool(BaseTool):
    """Validates arguments, then runs the blocking work in a worker thread."""

    args_model: ClassVar[type[_Args]]
    mutates: ClassVar[bool] = False

    def __init__(self, settings: FilesystemSettings) -> None:
        if not settings.root.is_dir():
            raise ConfigurationError(f"filesystem root {str(settings.root)!r} is not a directory")
        self.settings = settings
        self.jail = _Jail(settings.root)

    def parameters_schema(self) -> dict[str, Any]:
        return args_schema(self.args_model)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        parsed = parse_args(self.args_model, args)
        if self.mutates and self.settings.read_only:
            raise ToolExecutionError("the filesystem is read-only")
        return await asyncio.to_thread(self._run, parsed)

    @abstractmethod
    def _run(self, args: Any) -> Any:
        """Do the work, blocking, on arguments of type ``args_model``."""


def _fail(shown: str, exc: OSError) -> ToolExecutionError:
    return ToolExecutionError(f"{shown!r}: {exc.strerror or type(exc).__name__}")


def _open_file(path: Path, flags: int, shown: str) -> int:
    """A descriptor of the regular file at ``path``; never follows a symlink, never
    blocks on a FIFO."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolExecutionError(f"{shown!r} is not a regular file")
    return fd


def _read_bytes(path: Path, shown: str, offset: int, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes from ``offset``, and the file's size."""
    try:
        fd = _open_file(path, os.O_RDONLY, shown)
    except OSError as exc:
        raise _fail(shown, exc) from exc
    try:
        return os.pread(fd, limit, offset), os.fstat(fd).st_size
    finally:
        os.close(fd)


def _write_bytes(path: Path, shown: str, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_file(path, os.O_WRONLY | os.O_CREAT, shown)
    except OSError as exc:
        raise _fail(shown, exc) from exc
    with os.fdopen(fd, "wb") as file:
        file.truncate()
        file.write(data)


class _LsArgs(_Args):
    path: str = Field(".", description="Directory to list, relative to the root.")


class LsTool(_FilesystemTool):
    name = "ls"
    description = "List a directory. Directories end with '/'."
    args_model = _LsArgs

    def _run(self, args: _LsArgs) -> PathListing:
        directory = self.jail.resolve(args.path)
        if not directory.is_dir():
            raise ToolExecutionError(f"{args.path!r} is not a directory")
        walk = _Walk(self.jail, budget=self.settings.max_results)
        paths = [_listed(self.jail, directory, e) for e in walk.entries(directory, max_depth=1)]
        return PathListing(paths=paths, truncated=walk.truncated, skipped=walk.skipped)


def _listed(jail: _Jail, base: Path, entry: _Entry) -> str:
    shown = PurePosixPath(jail.show(base), *entry.parts).as_posix()
    return shown + "/" if entry.is_dir else shown


class _ReadArgs(_Args):
    path: str = Field(description="File to read, relative to the root.")
    offset: int = Field(0, ge=0, description="Byte offset to start reading at.")


class ReadTool(_FilesystemTool):
    name = "read"
    description = "Read a text file. Long files are truncated; read on with `offset`."
    args_model = _ReadArgs

    def _run(self, args: _ReadArgs) -> str:
        limit = self.settings.max_read_bytes
        data, size = _read_bytes(self.jail.resolve(args.path), args.path, args.offset, limit)
        text = data.decode("utf-8", errors="replace")
        end = args.offset + len(data)
        if end < size:
            text += f"\n{TRUNCATION_MARKER} {size} bytes in all; read on with offset={end}"
        return text


class _WriteArgs(_Args):
    path: str = Field(description="File to write, relative to the root.")
    content: str = Field(description="The whole new content of the file.")


class WriteTool(_FilesystemTool):
    name = "write"
    description = "Create or overwrite a text file; missing parent directories are created."
    args_model = _WriteArgs
    mutates = True

    def _run(self, args: _WriteArgs) -> str:
        data = args.content.encode()
        if len(data) > self.settings.max_write_bytes:
            raise ToolArgumentsError(
                f"content is {len(data)} bytes; the limit is {self.settings.max_write_bytes}"
            )
        _write_bytes(self.jail.resolve(args.path), args.path, data)
        return f"wrote {len(data)} bytes to {args.path}"


class _EditArgs(_Args):
    path: str = Field(description="File to edit, relative to the root.")
    old: str = Field(min_length=1, description="Exact text to replace.")
    new: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every occurrence, not just one.")


class EditTool(_FilesystemTool):
    name = "edit"
    description = "Replace exact text in a file; `old` must occur once unless `replace_all`."
    args_model = _EditArgs
    mutates = True

    def _run(self, args: _EditArgs) -> str:
        path = self.jail.resolve(args.path)
        limit = self.settings.max_write_bytes
        data, size = _read_bytes(path, args.path, 0, limit)
        if size > limit:
            raise ToolExecutionError(f"{args.path!r} is {size} bytes; the limit is {limit}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ToolExecutionError(f"{args.path!r} is not UTF-8 text") from exc
        count = text.count(args.old)
        if count == 0 or (count > 1 and not args.replace_all):
            found = "not found" if count == 0 else f"found {count} times"
            raise ToolExecutionError(f"`old` text {found} in {args.path!r}")
        updated = text.replace(args.old, args.new).encode()
        if len(updated) > limit:
            raise ToolExecutionError(f"the edit would make {args.path!r} exceed {limit} bytes")
        _write_bytes(path, args.path, updated)
        return f"replaced {count} occurrence(s) in {args.path}"


class _GlobArgs(_Args):
    pattern: str = Field(min_length=1, description="Glob such as 'src/**/*.py'.")
    path: str = Field(".", description="Directory the pattern is relative to.")


class GlobTool(_FilesystemTool):
    name = "glob"
    description = "Find paths matching a glob ('*', '?', '[..]', and '**' across directories)."
    args_model = _GlobArgs

    def _run(self, args: _GlobArgs) -> PathListing:
        if "\x00" in args.pattern:
            raise ToolArgumentsError("pattern contains a NUL byte")
        parts = PurePosixPath(args.pattern).parts
        literal = next((i for i, p in enumerate(parts) if _MAGIC & set(p)), len(parts))
        base = self.jail.resolve(str(PurePosixPath(args.path, *parts[:literal])))
        wanted = parts[literal:]
        if not wanted:
            exists = [_listed(self.jail, base, _Entry((), base, base.is_dir()))]
            return PathListing(paths=exists if base.exists() else [])
        depth = None if "**" in wanted else len(wanted)
        walk = _Walk(self.jail, budget=self.settings.max_scan_entries)
        found = (e for e in walk.entries(base, depth) if _matches(e.parts, wanted))
        paths, truncated = _take(
            (_listed(self.jail, base, e) for e in found), self.settings.max_results
        )
        return PathListing(paths=paths, truncated=truncated or walk.truncated, skipped=walk.skipped)


def _matches(parts: tuple[str, ...], pattern: tuple[str, ...]) -> bool:
    @cache
    def match(i: int, j: int) -> bool:
        if j == len(pattern):
            return i == len(parts)
        if pattern[j] == "**":
            return match(i, j + 1) or (i < len(parts) and match(i + 1, j))
        return i < len(parts) and fnmatchcase(parts[i], pattern[j]) and match(i + 1, j + 1)

    return match(0, 0)


def _take(items: Iterator[str], limit: int) -> tuple[list[str], bool]:
    taken: list[str] = []
    for item in items:
        if len(taken) == limit:
            return taken, True
        taken.append(item)
    return taken, False


class _GrepArgs(_Args):
    pattern: str = Field(min_length=1, description="Python regular expression.")
    path: str = Field(".", description="File or directory to search, relative to the root.")
    include: str | None = Field(None, description="Only files whose name matches this glob.")
    ignore_case: bool = False


class GrepTool(_FilesystemTool):
    name = "grep"
    description = "Search text files for a regular expression; answers 'path:line: text'."
    args_model = _GrepArgs

    def _run(self, args: _GrepArgs) -> GrepMatches:
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as exc:
            raise ToolArgumentsError(f"invalid regular expression: {exc}") from exc
        base = self.jail.resolve(args.path)
        walk = _Walk(self.jail, budget=self.settings.max_scan_entries)
        files: Iterator[_Entry]
        if base.is_dir():
            files = (e for e in walk.entries(base, None) if _included(e, args.include))
        elif base.is_file():
            files = iter([_Entry((), base, is_dir=False)])
        else:
            raise ToolExecutionError(f"{args.path!r}: no such file or directory")
        prefix = self.jail.show(base)
        lines = (line for e in files for line in self._search(e, prefix, regex, walk))
        matches, truncated = _take(lines, self.settings.max_results)
        return GrepMatches(
            matches=matches, truncated=truncated or walk.truncated, skipped=walk.skipped
        )

    def _search(
        self, entry: _Entry, prefix: str, regex: re.Pattern[str], walk: _Walk
    ) -> Iterator[str]:
        shown = PurePosixPath(prefix, *entry.parts).as_posix()
        limit = self.settings.max_read_bytes
        try:
            data, size = _read_bytes(entry.real, shown, 0, limit)
        except ToolExecutionError as exc:
            walk.skipped.append(exc.message)
            return
        if b"\x00" in data[:8192]:
            return  # binary
        if size > limit:
            walk.skipped.append(f"{shown}: only the first {limit} bytes searched")
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                yield f"{shown}:{number}: {line[:_GREP_LINE_CHARS]}"


def _included(entry: _Entry, include: str | None) -> bool:
    return not entry.is_dir and (include is None or fnmatchcase(entry.parts[-1], include))


class _MkdirArgs(_Args):
    path: str = Field(description="Directory to create (with its parents), relative to the root.")


class MkdirTool(_FilesystemTool):
    name = "mkdir"
    description = "Create a directory and any missing parents."
    args_model = _MkdirArgs
    mutates = True

    def _run(self, args: _MkdirArgs) -> str:
        path = self.jail.resolve(args.path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _fail(args.path, exc) from exc
        return f"directory {args.path} exists"


_READERS: tuple[type[_FilesystemTool], ...] = (LsTool, ReadTool, GlobTool, GrepTool)
_WRITERS: tuple[type[_FilesystemTool], ...] = (WriteTool, EditTool, MkdirTool)


def filesystem_tools(settings: FilesystemSettings) -> list[BaseTool]:
    """The filesystem tools for ``settings``: without the writers when it is read-only.

    Raises:
        ConfigurationError: if the root is not an existing directory.
    """
    kinds = _READERS if settings.read_only else _READERS + _WRITERS
    return [kind(settings) for kind in kinds]
