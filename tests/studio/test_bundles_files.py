"""Attached files travel in a bundle (version 2's ``files``): exported with their bytes,
imported as the importer's uploads (served to them, shown by their message), checked
as uploads are. A hostile file is refused with nothing stored and no byte left in
storage: too large, of another type than it says, bytes that are not its digest's,
not base64, attached by no message, too many bytes together, a failure half-way. A
version 1 bundle (no files) is still read."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from agents_core import events as core_events
from studio import bundles
from studio import files as stored_files
from studio.bundles import checks, imports
from studio.models import Agent, Blob, Event, ModelConfig, Run, Session, Upload
from studio.session_service import append_event_sync
from tests.studio.conftest import client_for, make_session, signed_in
from tests.support.images import png

pytestmark = pytest.mark.django_db

MARKUP_NAME = "<img src=x onerror=alert(1)>.png"
IMAGE = png(6, 4, (10, 120, 200))
NOTES = b"first line\nsecond line\n"


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return Path(settings.MEDIA_ROOT)


def stored(media: Path) -> list[str]:
    return sorted(p.name for p in (media / "blobs").rglob("*") if p.is_file())


def message_with_files(owner: User, files: list[tuple[str, bytes]]) -> Session:
    """A session of ``owner`` whose one message attached ``files`` (name, bytes)."""
    session = make_session(owner, title="pictures")
    checked = [stored_files.Checked(n, d, stored_files.sniff(d) or "") for n, d in files]
    parts = stored_files.store(owner, checked)
    said = core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        author="user",
        invocation_id=core_events.new_id(),
        session_id=session.key,
        parts=[core_events.TextPart(text="what are these?"), *parts],
    )
    append_event_sync(session.key, said)
    return session


def exported(session: Session) -> dict[str, Any]:
    response = client_for(session.owner).get(f"/api/sessions/{session.pk}/bundle/")
    assert response.status_code == 200, response.content
    return dict(json.loads(response.content))


@pytest.fixture
def document(ada: User) -> dict[str, Any]:
    """Ada's bundle of a message with an image (markup in its name) and a text file."""
    return exported(message_with_files(ada, [(MARKUP_NAME, IMAGE), ("notes.txt", NOTES)]))


def fresh_studio(media: Path) -> None:
    """Forget every stored file and its rows, as another Studio never had them."""
    Upload.objects.all().delete()
    Blob.objects.all().delete()
    for path in (media / "blobs").rglob("*"):
        if path.is_file():
            path.unlink()


def post(user: User, document: dict[str, Any]) -> Any:
    file = SimpleUploadedFile("b.json", json.dumps(document).encode())
    return client_for(user).post("/api/bundles/import/", {"file": file}, format="multipart")


def counts(user: User) -> tuple[int, ...]:
    return (
        Session.objects.filter(owner=user).count(),
        Agent.objects.filter(owner=user).count(),
        ModelConfig.objects.filter(owner=user).count(),
        Event.objects.filter(session__owner=user).count(),
        Run.objects.filter(session__owner=user).count(),
        Upload.objects.filter(owner=user).count(),
        Blob.objects.count(),
    )


def refused(user: User, document: dict[str, Any], code: str, media: Path) -> dict[str, Any]:
    before, files_before = counts(user), stored(media)
    response = post(user, document)
    assert response.status_code == 400, response.content
    body: dict[str, Any] = response.json()
    assert body["errors"][0]["code"] == code, body
    assert counts(user) == before
    assert stored(media) == files_before
    return body


def test_the_bundle_carries_each_file_once_with_its_bytes(document: dict[str, Any]) -> None:
    assert document["version"] == 2
    entries = {e["sha256"]: e for e in document["files"]}
    for data, kind in ((IMAGE, "image/png"), (NOTES, "text/plain")):
        entry = entries[hashlib.sha256(data).hexdigest()]
        assert base64.b64decode(entry["data"]) == data
        assert (entry["content_type"], entry["size"]) == (kind, len(data))
    assert len(document["files"]) == 2


def test_imported_files_are_the_importers_and_show_by_their_message(
    document: dict[str, Any], bob: User, media: Path
) -> None:
    fresh_studio(media)
    response = post(bob, document)
    assert response.status_code == 201, response.content
    session = Session.objects.get(pk=response.json()["id"])
    [said] = session.events.filter(type="user_message")
    names = [p["name"] for p in said.payload["parts"] if p["kind"] == "file"]
    assert names == [MARKUP_NAME, "notes.txt"]  # stored as it was, shown as text
    for data in (IMAGE, NOTES):
        blob_id = hashlib.sha256(data).hexdigest()
        served = signed_in(bob).get(f"/files/{blob_id}/")
        assert served.status_code == 200 and b"".join(served) == data
    assert len(stored(media)) == 2
    again = post(bob, document)  # the same bytes again: stored once
    assert again.status_code == 201 and len(stored(media)) == 2
    assert Upload.objects.filter(owner=bob).count() == 2


def test_a_file_of_another_user_is_not_served_to_the_importer(
    document: dict[str, Any], ada: User, bob: User, media: Path
) -> None:
    fresh_studio(media)
    assert post(bob, document).status_code == 201
    blob_id = hashlib.sha256(IMAGE).hexdigest()
    assert signed_in(ada).get(f"/files/{blob_id}/").status_code == 404


def test_a_version_1_bundle_is_still_read_without_files(
    document: dict[str, Any], bob: User, media: Path
) -> None:
    older = {k: v for k, v in document.items() if k != "files"} | {"version": 1}
    response = post(bob, older)
    assert response.status_code == 201, response.content
    assert response.json()["imported_from"]["version"] == 1
    body = refused(bob, {**older, "files": document["files"]}, "bundle_schema", media)
    assert body["errors"][0]["path"] == "bundle.files"


def reencoded(entry: dict[str, Any], data: bytes) -> None:
    entry["data"] = base64.b64encode(data).decode()


def _changed_bytes(b: dict[str, Any]) -> None:
    entry = b["files"][0]
    data = bytearray(base64.b64decode(entry["data"]))
    data[-1] ^= 1
    reencoded(entry, bytes(data))


def _named_by_no_message(b: dict[str, Any]) -> None:
    extra = b"another file\n"
    b["files"].append(
        {
            "sha256": hashlib.sha256(extra).hexdigest(),
            "content_type": "text/plain",
            "size": len(extra),
            "data": base64.b64encode(extra).decode(),
        }
    )


def _part_says_another_type(b: dict[str, Any]) -> None:
    [said] = [e for e in b["events"] if e["type"] == "user_message"]
    said["parts"][1]["content_type"] = "image/gif"


HOSTILE: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("digest mismatch", _changed_bytes, "bundle_file_digest", "bundle.files.0.sha256"),
    (
        "another type than its bytes",
        lambda b: b["files"][0].update(content_type="image/gif"),
        "bundle_file_type",
        "bundle.files.0.content_type",
    ),
    (
        "a type no upload may be",
        lambda b: b["files"][0].update(content_type="text/html"),
        "bundle_file_type",
        "bundle.files.0.content_type",
    ),
    (
        "not base64",
        lambda b: b["files"][0].update(data="!!!!"),
        "bundle_bad_file",
        "bundle.files.0.data",
    ),
    (
        "another size than its bytes",
        lambda b: b["files"][0].update(size=b["files"][0]["size"] + 1),
        "bundle_bad_file",
        "bundle.files.0",
    ),
    ("attached by no message", _named_by_no_message, "bundle_bad_file", "bundle.files.2"),
    (
        "listed twice",
        lambda b: b["files"].append(copy.deepcopy(b["files"][0])),
        "bundle_bad_file",
        "bundle.files.2",
    ),
    ("its message says another type", _part_says_another_type, "bundle_bad_file", "bundle.files.0"),
    (
        "a bad digest",
        lambda b: b["files"][0].update(sha256="../../etc/passwd"),
        "bundle_schema",
        "bundle.files.0.sha256",
    ),
    (
        "an unknown field",
        lambda b: b["files"][0].update(name="x"),
        "bundle_schema",
        "bundle.files.0.name",
    ),
]


@pytest.mark.parametrize(
    ("change", "code", "path"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE]
)
def test_a_hostile_file_is_refused_with_nothing_stored(
    document: dict[str, Any],
    bob: User,
    media: Path,
    change: Callable[[dict[str, Any]], None],
    code: str,
    path: str,
) -> None:
    fresh_studio(media)
    broken = copy.deepcopy(document)
    change(broken)
    body = refused(bob, broken, code, media)
    assert body["errors"][0]["path"] == path
    assert stored(media) == []


def test_html_declared_as_text_is_refused(ada: User, bob: User, media: Path) -> None:
    """Markup is never stored as a file, whatever it says it is (as for an upload)."""
    page = b"<html><script>alert(1)</script></html>"
    document = exported(message_with_files(ada, [("page.txt", b"plain words\n")]))
    fresh_studio(media)
    entry = document["files"][0]
    [said] = [e for e in document["events"] if e["type"] == "user_message"]
    digest = hashlib.sha256(page).hexdigest()
    entry.update(sha256=digest, size=len(page))
    reencoded(entry, page)
    said["parts"][1].update(blob_id=digest, size=len(page))
    body = refused(bob, document, "bundle_file_type", media)
    assert "not text/plain" in body["detail"]


def test_a_file_larger_than_an_upload_may_be_is_refused(
    document: dict[str, Any], bob: User, media: Path, settings: Any
) -> None:
    fresh_studio(media)
    settings.STUDIO_UPLOAD_MAX_BYTES = len(IMAGE) - 1
    body = refused(bob, document, "bundle_file_too_large", media)
    assert f"at most {len(IMAGE) - 1} bytes" in body["detail"]


def test_files_over_the_bundles_limit_together_are_refused(
    document: dict[str, Any], bob: User, media: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh_studio(media)
    monkeypatch.setattr(checks, "MAX_FILE_BYTES", len(IMAGE) + len(NOTES) - 1)
    body = refused(bob, document, "bundle_files_too_large", media)
    assert body["errors"][0]["path"] == "bundle.files.1"


def test_a_failure_after_the_files_were_written_leaves_none_behind(
    document: dict[str, Any], ada: User, bob: User, media: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes this import wrote go with its rows; bytes already stored stay."""
    kept = stored(media)
    Upload.objects.filter(owner=ada, blob_id=hashlib.sha256(NOTES).hexdigest()).delete()
    notes = hashlib.sha256(NOTES).hexdigest()
    Blob.objects.filter(pk=notes).delete()
    stored_files.default_storage.delete(stored_files.blob_path(notes))
    assert len(stored(media)) == 1  # the image is still Ada's; the notes are gone

    def fail(*args: Any) -> None:
        raise checks.refuse("bundle_bad_approval", "failed half-way")

    monkeypatch.setattr(imports, "_runs", fail)
    refused(bob, document, "bundle_bad_approval", media)
    assert stored(media) == [hashlib.sha256(IMAGE).hexdigest()]  # Ada's, kept
    assert kept  # there was something to keep


def test_the_exporter_leaves_out_files_past_its_limits(
    ada: User, bob: User, media: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose bytes were swept, or past the bundle's budget, is named by its
    message but not carried; the bundle still imports."""
    session = message_with_files(ada, [("a.png", IMAGE), ("n.txt", NOTES)])
    monkeypatch.setattr(bundles.export, "MAX_FILE_BYTES", len(IMAGE))
    assert [e["size"] for e in exported(session)["files"]] == [len(IMAGE)]
    stored_files.default_storage.delete(stored_files.blob_path(hashlib.sha256(IMAGE).hexdigest()))
    document = exported(session)
    assert [e["size"] for e in document["files"]] == [len(NOTES)]
    assert post(bob, document).status_code == 201
