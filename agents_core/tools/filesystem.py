"""Filesystem tools jailed to one root directory: ls, read, write, edit, glob, grep, mkdir.

Paths go through the jail in ``agents_core.tools._jail``: resolved component by
component inside the root, symlinks followed only within it, files opened with
``O_NOFOLLOW``. ``ls``, ``glob`` and ``grep`` skip (and report) symlinks that leave the
root, are broken or loop, and never descend into symlinked directories.
"""

from __future__ import annotations

import asyncio
import re
from abc import abstractmethod
from collections.abc import Iterator
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, field_validator

from agents_core.exceptions import ConfigurationError, ToolArgumentsError, ToolExecutionError
from agents_core.tools._jail import (
    Entry,
    Jail,
    PathEscapeError,
    Walk,
    os_error,
    read_bytes,
    write_bytes,
)
from agents_core.tools.base import BaseTool, ToolContext, args_schema, parse_args

__all__ = [
    "FilesystemSettings",
    "GrepMatches",
    "PathEscapeError",
    "PathListing",
    "filesystem_tools",
]

TRUNCATION_MARKER = "[... truncated]"
_MAGIC = frozenset("*?[")
_GREP_LINE_CHARS = 400


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
        self.jail = Jail(settings.root)

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


class _LsArgs(_Args):
    path: str = Field(".", description="Directory to list, relative to the root.")


class LsTool(_FilesystemTool):
    name = "ls"
    side_effects = False
    description = "List a directory. Directories end with '/'."
    args_model = _LsArgs

    def _run(self, args: _LsArgs) -> PathListing:
        directory = self.jail.resolve(args.path)
        if not directory.is_dir():
            raise ToolExecutionError(f"{args.path!r} is not a directory")
        walk = Walk(self.jail, budget=self.settings.max_results)
        paths = [_listed(self.jail, directory, e) for e in walk.entries(directory, max_depth=1)]
        return PathListing(paths=paths, truncated=walk.truncated, skipped=walk.skipped)


def _listed(jail: Jail, base: Path, entry: Entry) -> str:
    shown = PurePosixPath(jail.show(base), *entry.parts).as_posix()
    return shown + "/" if entry.is_dir else shown


class _ReadArgs(_Args):
    path: str = Field(description="File to read, relative to the root.")
    offset: int = Field(0, ge=0, description="Byte offset to start reading at.")


class ReadTool(_FilesystemTool):
    name = "read"
    side_effects = False
    description = "Read a text file. Long files are truncated; read on with `offset`."
    args_model = _ReadArgs

    def _run(self, args: _ReadArgs) -> str:
        limit = self.settings.max_read_bytes
        data, size = read_bytes(self.jail.resolve(args.path), args.path, args.offset, limit)
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
        write_bytes(self.jail.resolve(args.path), args.path, data)
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
        data, size = read_bytes(path, args.path, 0, limit)
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
        write_bytes(path, args.path, updated)
        return f"replaced {count} occurrence(s) in {args.path}"


class _GlobArgs(_Args):
    pattern: str = Field(min_length=1, description="Glob such as 'src/**/*.py'.")
    path: str = Field(".", description="Directory the pattern is relative to.")


class GlobTool(_FilesystemTool):
    name = "glob"
    side_effects = False
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
            exists = [_listed(self.jail, base, Entry((), base, base.is_dir()))]
            return PathListing(paths=exists if base.exists() else [])
        depth = None if "**" in wanted else len(wanted)
        walk = Walk(self.jail, budget=self.settings.max_scan_entries)
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
    side_effects = False
    description = "Search text files for a regular expression; answers 'path:line: text'."
    args_model = _GrepArgs

    def _run(self, args: _GrepArgs) -> GrepMatches:
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as exc:
            raise ToolArgumentsError(f"invalid regular expression: {exc}") from exc
        base = self.jail.resolve(args.path)
        walk = Walk(self.jail, budget=self.settings.max_scan_entries)
        files: Iterator[Entry]
        if base.is_dir():
            files = (e for e in walk.entries(base, None) if _included(e, args.include))
        elif base.is_file():
            files = iter([Entry((), base, is_dir=False)])
        else:
            raise ToolExecutionError(f"{args.path!r}: no such file or directory")
        prefix = self.jail.show(base)
        lines = (line for e in files for line in self._search(e, prefix, regex, walk))
        matches, truncated = _take(lines, self.settings.max_results)
        return GrepMatches(
            matches=matches, truncated=truncated or walk.truncated, skipped=walk.skipped
        )

    def _search(
        self, entry: Entry, prefix: str, regex: re.Pattern[str], walk: Walk
    ) -> Iterator[str]:
        shown = PurePosixPath(prefix, *entry.parts).as_posix()
        limit = self.settings.max_read_bytes
        try:
            data, size = read_bytes(entry.real, shown, 0, limit)
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


def _included(entry: Entry, include: str | None) -> bool:
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
            raise os_error(args.path, exc) from exc
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
