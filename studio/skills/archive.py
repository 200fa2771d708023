"""Reading an uploaded skill: a zip archive, or a folder's files, into paths and bytes
for ``agents_core.skills.check_folder``.

A zip is judged from its central directory before a byte is inflated: at most
``MAX_FILES`` entries and ``MAX_TOTAL_BYTES`` declared uncompressed, no symbolic link,
no encrypted entry, no name twice. Inflating is bounded too, so an entry that lies
about its size (a zip bomb) is caught at the limit rather than in memory.
"""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Iterable

from agents_core.skills import MAX_FILES, MAX_TOTAL_BYTES, SkillFormatError, check_path

__all__ = ["MAX_ARCHIVE_BYTES", "read_folder", "read_zip"]

MAX_ARCHIVE_BYTES = 2 * MAX_TOTAL_BYTES
"""The largest upload taken at all, compressed or not."""


def read_zip(data: bytes) -> dict[str, bytes]:
    """The files of the zip ``data`` (directories left out); ``SkillFormatError`` for
    anything that is not a plain, bounded archive of regular files."""
    if len(data) > MAX_ARCHIVE_BYTES:
        raise SkillFormatError(f"an archive may be at most {MAX_ARCHIVE_BYTES} bytes")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise SkillFormatError(f"not a zip archive: {exc}") from None
    with archive:
        entries = [info for info in archive.infolist() if not info.is_dir()]
        _check_entries(entries)
        return {info.filename: _inflate(archive, info) for info in entries}


def _check_entries(entries: list[zipfile.ZipInfo]) -> None:
    if len(entries) > MAX_FILES:
        raise SkillFormatError(f"a skill may have at most {MAX_FILES} files, not {len(entries)}")
    declared = sum(info.file_size for info in entries)
    if declared > MAX_TOTAL_BYTES:
        raise SkillFormatError(
            f"a skill may hold at most {MAX_TOTAL_BYTES:,} bytes uncompressed, not {declared:,}"
        )
    seen: set[str] = set()
    for info in entries:
        name = check_path(info.filename)
        if stat.S_ISLNK(info.external_attr >> 16):
            raise SkillFormatError(f"{name!r} is a symbolic link: a skill holds only files")
        if info.flag_bits & 0x1:
            raise SkillFormatError(f"{name!r} is encrypted")
        if name in seen:
            raise SkillFormatError(f"{name!r} is in the archive twice")
        seen.add(name)


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    try:
        with archive.open(info) as entry:
            content = entry.read(info.file_size + 1)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as exc:
        raise SkillFormatError(f"{info.filename!r} cannot be read: {exc}") from None
    if len(content) > info.file_size:
        raise SkillFormatError(f"{info.filename!r} is larger than the archive says")
    return content


def read_folder(files: Iterable[tuple[str, bytes]]) -> dict[str, bytes]:
    """A folder sent file by file (relative path, content), bounded like an archive;
    ``SkillFormatError`` for a path given twice."""
    found: dict[str, bytes] = {}
    total = 0
    for path, content in files:
        if len(found) >= MAX_FILES:
            raise SkillFormatError(f"a skill may have at most {MAX_FILES} files")
        total += len(content)
        if total > MAX_TOTAL_BYTES:
            raise SkillFormatError(f"a skill may hold at most {MAX_TOTAL_BYTES:,} bytes")
        if check_path(path) in found:
            raise SkillFormatError(f"{path!r} is sent twice")
        found[path] = content
    return found
