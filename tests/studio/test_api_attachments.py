"""Images and files attached to a message through the API: checked by their bytes,
stored once, sent to the model as an image block (asserted on what the in-repo
Anthropic server received), served to their owner only; a refused file leaves
nothing stored."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from studio.models import Event, ModelConfig, Run, RunStatus, Upload
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, error_paths, make_agent, make_session
from tests.support.anthropic_server import AnthropicServer
from tests.support.images import png

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.STUDIO_UPLOAD_MAX_BYTES = 4096
    return settings.MEDIA_ROOT


def _blobs(media: Path) -> list[Path]:
    return [p for p in (media / "blobs").rglob("*") if p.is_file()] if media.exists() else []


def _model(owner: User, provider: str, base_url: str = "http://127.0.0.1:9") -> ModelConfig:
    config = ModelConfig(
        owner=owner, name="eyes", provider=provider, model="test-model", base_url=base_url
    )
    config.set_api_key("sk-test-key-abcdefgh")
    config.save()
    return config


def _post(
    user: User, session_id: Any, *files: SimpleUploadedFile, text: str = "what is it?"
) -> Any:
    body = {"text": text, "files": list(files)}
    return client_for(user).post(f"/api/sessions/{session_id}/messages/", body, format="multipart")


def _image(name: str = "red.png", data: bytes | None = None, kind: str = "image/png") -> Any:
    return SimpleUploadedFile(name, data if data is not None else png(), content_type=kind)


async def test_an_attached_image_is_stored_once_and_reaches_the_model_as_an_image(
    ada: User, media: Path, recording_executor: Any
) -> None:
    with AnthropicServer() as server:
        server.reply("A red square.")
        server.reply("Still a red square.")

        @sync_to_async
        def post_twice_and_run() -> list[Run]:
            _model(ada, "anthropic", server.base_url)
            session = make_session(ada, make_agent(ada, "looker", model="eyes"))
            return [Run.objects.get(pk=_post(ada, session.pk, _image()).json()["id"])]

        (first,) = await post_twice_and_run()
        assert (await execute_run(first)).status == RunStatus.SUCCEEDED
        second = await sync_to_async(
            lambda: Run.objects.get(
                pk=_post(ada, first.session_id, _image("again.png")).json()["id"]
            )
        )()
        finished = await execute_run(second)

    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    image = base64.b64encode(png()).decode()
    content = server.requests[0].body["messages"][0]["content"]
    assert {"type": "text", "text": "what is it?"} in content
    assert {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": image},
    } in content
    assert len(_blobs(media)) == 1  # the same bytes twice: stored once
    assert await Upload.objects.filter(owner=ada).acount() == 1
    said = [
        e.payload
        async for e in Event.objects.filter(session_id=first.session_id, type="user_message")
    ]
    files = [p for e in said for p in e["parts"] if p["kind"] == "file"]
    assert [f["name"] for f in files] == ["red.png", "again.png"]
    assert {(f["content_type"], f["size"]) for f in files} == {("image/png", len(png()))}
    assert "data" not in repr(files)  # a reference, not the bytes


@pytest.mark.parametrize(
    ("upload", "code"),
    [
        (lambda: _image(data=b"\x89PNG" + b"x" * 5000), "file_too_large"),
        (lambda: _image("page.png", b"<html><script>alert(1)</script>"), "file_type_not_allowed"),
        (lambda: _image("x.svg", b"  <svg onload='alert(1)'/>"), "file_type_not_allowed"),
        (lambda: _image("tool.exe", b"MZ\x90\x00\x03\x00\x00\x00"), "file_type_not_allowed"),
        (lambda: _image("empty.png", b""), "file_empty"),
    ],
    ids=["oversize", "html-declared-png", "svg", "executable", "empty"],
)
def test_a_refused_file_answers_400_naming_it_and_nothing_is_stored(
    ada: User, media: Path, recording_executor: Any, upload: Any, code: str
) -> None:
    session = make_session(ada)

    response = _post(ada, session.pk, _image("fine.png"), upload())

    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] in {code, "empty"}
    assert "files.1" in error_paths(response)
    assert (Upload.objects.count(), Run.objects.count(), Event.objects.count()) == (0, 0, 0)
    assert _blobs(media) == []
    assert recording_executor.submitted == []


def test_a_model_that_takes_no_images_is_refused_before_anything_is_stored(
    ada: User, media: Path, recording_executor: Any
) -> None:
    _model(ada, "openai_compatible")  # vision is off unless set
    session = make_session(ada, make_agent(ada, "blind", model="eyes"))

    response = _post(ada, session.pk, _image())

    assert "does not accept images" in error_paths(response)["files"]
    assert (Upload.objects.count(), Run.objects.count(), _blobs(media)) == (0, 0, [])


def test_an_attached_file_is_served_to_its_owner_only_never_sniffed(
    ada: User, bob: User, recording_executor: Any
) -> None:
    session = make_session(ada)
    assert _post(ada, session.pk, _image()).status_code == 202
    (upload,) = Upload.objects.all()
    url = f"/files/{upload.blob_id}/"
    owner, other = Client(), Client()
    owner.force_login(ada)
    other.force_login(bob)

    served = owner.get(url)

    assert served.status_code == 200
    assert served.content == png()
    assert served["Content-Type"] == "image/png"
    assert served["X-Content-Type-Options"] == "nosniff"
    assert served["Content-Disposition"].startswith("inline;")
    assert "sandbox" in served["Content-Security-Policy"]
    assert other.get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to the login page


def test_plain_text_is_taken_and_downloaded_not_shown(ada: User, recording_executor: Any) -> None:
    session = make_session(ada)
    note = SimpleUploadedFile("note.txt", "hé, 2 < 3\n".encode(), content_type="text/html")

    assert _post(ada, session.pk, note).status_code == 202

    (upload,) = Upload.objects.all()
    assert upload.content_type == "text/plain"  # what the bytes are, not what was said
    client = Client()
    client.force_login(ada)
    served = client.get(f"/files/{upload.blob_id}/")
    assert served["Content-Type"] == "text/plain"
    assert served["Content-Disposition"].startswith("attachment;")


def test_a_session_export_carries_its_files_bytes_once_each(
    ada: User, bob: User, recording_executor: Any
) -> None:
    _model(ada, "anthropic")
    session = make_session(ada, make_agent(ada, "looker", model="eyes"))
    text = b"plain notes\n"
    assert _post(ada, session.pk, _image(), _image("again.png")).status_code == 202
    Run.objects.filter(session=session).update(status=RunStatus.SUCCEEDED)
    notes = SimpleUploadedFile("notes.txt", text, content_type="text/plain")
    assert _post(ada, session.pk, notes).status_code == 202

    response = client_for(ada).get(f"/api/sessions/{session.pk}/export/")

    assert response.status_code == 200, response.content
    document = response.json()
    assert (document["format"], document["format_version"]) == ("studio.session", 2)
    exported = [
        (f["sha256"], f["content_type"], f["size"], base64.b64decode(f["data"]))
        for f in document["files"]
    ]
    assert exported == [
        (hashlib.sha256(png()).hexdigest(), "image/png", len(png()), png()),
        (hashlib.sha256(text).hexdigest(), "text/plain", len(text), text),
    ]
    missing = client_for(bob).get(f"/api/sessions/{session.pk}/export/")
    assert missing.status_code == 404
