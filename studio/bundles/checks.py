"""Reading an uploaded bundle, trusting nothing in it: its size (and, zipped, its
members, their names and their uncompressed size, read with a cap), its JSON, its
``format`` and ``version`` first, then the schema (``studio.bundles.format``), secrets
in its model configurations, its events (each a valid ``agents_core`` event, seqs
1..n with none missing), the runs' links and the attached files (each named by a
message, as large and of the type an upload may be, its bytes what its SHA-256 says).
Every refusal is an ``InvalidInputError`` on ``bundle`` with the path of the first
problem."""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from pydantic import ValidationError

from agents_core import events as core_events
from agents_core.blobs import blob_id_of
from studio import files as stored_files
from studio.bundles import format as f
from studio.bundles.export import BUNDLE_MEMBER, MAX_FILE_BYTES
from studio.errors import InvalidInputError, Path, Problem

MAX_BYTES = 20 * 1024 * 1024
"""The most a bundle may be: its JSON, or a zip's upload and its uncompressed members."""
MAX_MEMBERS = 8
MAX_DEPTH = 64
"""How deep the JSON may nest (a deeper document is refused before it is parsed)."""
SECRET_WORDS = (
    "apikey",
    "api_key",
    "secret",
    "password",
    "passwd",
    "ciphertext",
    "hint",
    "authorization",
    "credential",
    "bearer",
    "cookie",
)
SECRET_ENDINGS = ("_key", "_token", "_secret", "_password")
SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_-]{12,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{20,})")


@dataclass(frozen=True, slots=True)
class Checked:
    """A bundle that passed every check, with its events as core events."""

    bundle: f.Bundle
    events: list[core_events.Event]
    files: list[stored_files.Checked]
    """The attached files' bytes, checked as uploads are."""


def refuse(code: str, message: str, path: Path = ()) -> InvalidInputError:
    return InvalidInputError("bundle", [Problem(path, code, message)])


def read_upload(name: str, data: bytes) -> Checked:
    """The bundle in an uploaded file (``.json``, or a zip holding ``bundle.json``)."""
    if len(data) > MAX_BYTES:
        raise refuse("bundle_too_large", f"a bundle may be at most {MAX_BYTES} bytes")
    if data[:4] == b"PK\x03\x04" or name.lower().endswith(".zip"):
        data = _unzipped(data)
    return check(_decoded(data))


def _unzipped(data: bytes) -> bytes:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise refuse("bundle_bad_zip", "not a readable zip file") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise refuse("bundle_bad_zip", f"a bundle zip may hold at most {MAX_MEMBERS} files")
        for member in members:
            _check_member_name(member.filename)
        if sum(m.file_size for m in members) > MAX_BYTES:
            raise refuse("bundle_too_large", f"a bundle may unpack to at most {MAX_BYTES} bytes")
        if BUNDLE_MEMBER not in archive.namelist():
            raise refuse("bundle_bad_zip", f"the zip holds no {BUNDLE_MEMBER}")
        extra = [m.filename for m in members if m.filename != BUNDLE_MEMBER]
        if extra:
            raise refuse("bundle_bad_zip", f"unexpected file in the zip: {extra[0]!r}")
        with archive.open(BUNDLE_MEMBER) as member_file:
            # The stated size can lie: read one byte past the cap to know.
            body = member_file.read(MAX_BYTES + 1)
    if len(body) > MAX_BYTES:
        raise refuse("bundle_too_large", f"a bundle may unpack to at most {MAX_BYTES} bytes")
    return body


def _check_member_name(name: str) -> None:
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or ":" in name or "\x00" in name:
        raise refuse("bundle_bad_zip", f"a zip member's name may not leave the archive: {name!r}")


def _decoded(data: bytes) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise refuse("bundle_not_json", "a bundle is UTF-8 JSON") from None
    if "\\u0000" in text:  # PostgreSQL stores no NUL in text or JSON: refused, not cut
        raise refuse("bundle_not_json", "a bundle's text may not hold NUL characters (\\u0000)")
    too_deep = refuse("bundle_too_deep", f"a bundle's JSON may nest at most {MAX_DEPTH} levels")
    try:
        document = json.loads(text)
    except RecursionError:
        raise too_deep from None
    except ValueError as exc:
        raise refuse("bundle_not_json", f"not JSON: {exc}") from None
    if _depth_over(document, MAX_DEPTH):
        raise too_deep
    return document


def _depth_over(document: Any, limit: int) -> bool:
    """Whether ``document`` nests deeper than ``limit`` (what reads it later recurses)."""
    pending: list[tuple[Any, int]] = [(document, 1)]
    while pending:
        node, depth = pending.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            pending.extend((value, depth + 1) for value in node.values())
        elif isinstance(node, list):
            pending.extend((value, depth + 1) for value in node)
    return False


def check(document: Any) -> Checked:
    """``document`` (parsed JSON) as a checked bundle, or the first reason it is not one."""
    _check_header(document)
    _check_secrets(document)
    try:
        bundle = f.Bundle.model_validate(document)
    except ValidationError as exc:
        problems = [
            Problem(tuple(e["loc"]), "bundle_schema", f"{e['msg']}") for e in exc.errors()[:20]
        ]
        raise InvalidInputError("bundle", problems) from None
    events = _check_events(bundle)
    _check_runs(bundle, len(events))
    return Checked(bundle, events, _check_files(bundle, events))


def _check_header(document: Any) -> None:
    if not isinstance(document, dict):
        raise refuse("bundle_schema", "a bundle is a JSON object")
    if document.get("format") != f.FORMAT:
        raise refuse("bundle_format", f"not a Studio run bundle (format must be {f.FORMAT!r})")
    version = document.get("version")
    if version not in f.SUPPORTED_VERSIONS:
        known = ", ".join(str(v) for v in sorted(f.SUPPORTED_VERSIONS))
        raise refuse(
            "bundle_version",
            f"bundle version {version!r} is not supported here (this Studio reads {known})",
            ("version",),
        )


def _check_secrets(document: dict[str, Any]) -> None:
    """A model configuration holding anything like a key is refused, not cleaned: a
    bundle carrying a secret was made wrong, and its maker should know."""
    agent = document.get("agent")
    configs = agent.get("model_configs") if isinstance(agent, dict) else None
    if not isinstance(configs, list):
        return
    for path, key, value in _walk(configs, ("agent", "model_configs")):
        if key is not None and is_secret_key(key):
            raise refuse(
                "bundle_has_secret",
                f"a model configuration may not carry {key!r}: bundles hold no secrets",
                path,
            )
        if isinstance(value, str) and (SECRET_VALUE.search(value) or _has_userinfo(value)):
            raise refuse(
                "bundle_has_secret",
                "a model configuration holds what looks like a key or a password",
                path,
            )


def is_secret_key(key: str) -> bool:
    """Whether a field named ``key`` would hold a secret (``max_tokens`` would not)."""
    name = key.lower().replace("-", "_")
    return (
        name in {"key", "token", "auth"}
        or name.endswith(SECRET_ENDINGS)
        or any(word in name for word in SECRET_WORDS)
    )


def _has_userinfo(value: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://[^/@]*@", value, re.IGNORECASE))


def _walk(node: Any, path: Path) -> Iterator[tuple[Path, str | None, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*path, str(key)), str(key), value
            yield from _walk(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield (*path, index), None, value
            yield from _walk(value, (*path, index))


def _check_events(bundle: f.Bundle) -> list[core_events.Event]:
    events = []
    ids: set[str] = set()
    for index, payload in enumerate(bundle.events):
        try:
            event = core_events.Event.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ("events", index, *first["loc"])
            raise refuse("bundle_bad_event", f"not a Studio event: {first['msg']}", where) from None
        if event.seq != index + 1:
            raise refuse(
                "bundle_seq_gap",
                f"events must have seq 1, 2, 3 ... in order; event {index} has {event.seq}",
                ("events", index, "seq"),
            )
        if event.id in ids:
            raise refuse("bundle_bad_event", "two events have one id", ("events", index, "id"))
        ids.add(event.id)
        if event.partial:
            raise refuse("bundle_bad_event", "partial events are never stored", ("events", index))
        events.append(event)
    return events


def _check_runs(bundle: f.Bundle, last_seq: int) -> None:
    ids: set[str] = set()
    for index, run in enumerate(bundle.runs):
        if run.id in ids:
            raise refuse("bundle_bad_run", "two runs have one id", ("runs", index, "id"))
        if run.resumed_from is not None and run.resumed_from not in ids:
            raise refuse(
                "bundle_bad_run",
                "resumed_from must name an earlier run of the bundle",
                ("runs", index, "resumed_from"),
            )
        if run.start_seq is not None and run.start_seq > last_seq:
            raise refuse(
                "bundle_bad_run", "start_seq is past the last event", ("runs", index, "start_seq")
            )
        ids.add(run.id)
    decided: set[tuple[str, str]] = set()
    for index, approval in enumerate(bundle.approvals):
        if approval.run not in ids:
            raise refuse(
                "bundle_bad_approval", "names no run of the bundle", ("approvals", index, "run")
            )
        if (approval.run, approval.call_id) in decided:
            raise refuse(
                "bundle_bad_approval",
                "a call is decided once",
                ("approvals", index, "call_id"),
            )
        decided.add((approval.run, approval.call_id))


def _check_files(bundle: f.Bundle, events: list[core_events.Event]) -> list[stored_files.Checked]:
    """Each file once, named by a message of the bundle, whose ``file`` parts say the
    same type and size; as large and of a type an upload may be; its bytes what its
    digest says; ``MAX_FILE_BYTES`` together."""
    if bundle.version == 1 and bundle.files:
        raise refuse("bundle_schema", "files are carried from version 2 on", ("files",))
    named: dict[str, list[core_events.FilePart]] = {}
    for event in events:
        for part in event.parts:
            if isinstance(part, core_events.FilePart):
                named.setdefault(part.blob_id, []).append(part)
    checked: list[stored_files.Checked] = []
    total = 0
    for index, entry in enumerate(bundle.files):
        where = ("files", index)
        parts = named.pop(entry.sha256, None)
        if parts is None:
            message = "no message of the bundle attaches it (or it is listed twice)"
            raise refuse("bundle_bad_file", message, where)
        total += entry.size
        if total > MAX_FILE_BYTES:
            message = f"a bundle's files may be at most {MAX_FILE_BYTES} bytes together"
            raise refuse("bundle_files_too_large", message, where)
        data = _file_bytes(entry, where)
        if any((p.content_type, p.size) != (entry.content_type, entry.size) for p in parts):
            message = "its message's file part says another type or size"
            raise refuse("bundle_bad_file", message, where)
        checked.append(stored_files.Checked(parts[0].name, data, entry.content_type))
    return checked


def _file_bytes(entry: f.BundleFile, where: Path) -> bytes:
    """The bytes of ``entry``: as large as an upload may be, its digest and its type
    what it says (the type is what the bytes are, as for an upload)."""
    limit: int = settings.STUDIO_UPLOAD_MAX_BYTES
    if entry.size > limit or len(entry.data) > 4 * (limit // 3 + 1):
        raise refuse("bundle_file_too_large", f"a file may be at most {limit} bytes", where)
    try:
        data = base64.b64decode(entry.data, validate=True)
    except binascii.Error:
        raise refuse("bundle_bad_file", "data is not base64", (*where, "data")) from None
    if len(data) != entry.size:
        raise refuse("bundle_bad_file", f"data is {len(data)} bytes, not {entry.size}", where)
    if blob_id_of(data) != entry.sha256:
        message = "the bytes' SHA-256 is not the one recorded: the file was changed"
        raise refuse("bundle_file_digest", message, (*where, "sha256"))
    sniffed = stored_files.sniff(data)
    if sniffed != entry.content_type:
        allowed = "PNG, JPEG, GIF, WebP, PDF or UTF-8 plain text"
        said = f"{sniffed}" if sniffed else f"none of {allowed}"
        message = f"the bytes are {said}, not {entry.content_type}"
        raise refuse("bundle_file_type", message, (*where, "content_type"))
    return data
