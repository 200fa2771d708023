"""Sweeping stored files: bytes and rows that no remaining session refers to go, once
older than the grace period; what any session (of any owner) still names stays, and
so does anything used within the grace period (a message may be on its way)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction
from django.test import Client
from django.utils import timezone

from agents_core.blobs import blob_id_of
from studio import files
from studio.files.sweep import Swept, sweep
from studio.models import Blob, ModelConfig, Session, Upload
from tests.studio.conftest import client_for, make_agent, make_session
from tests.support.images import png

pytestmark = pytest.mark.django_db(transaction=True)

RED, BLUE = png(rgb=(200, 30, 30)), png(rgb=(30, 30, 200))
GRACE = timedelta(hours=1)
LATER = timedelta(hours=2)


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path, recording_executor: Any) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def looking_session(owner: User) -> Session:
    if not ModelConfig.objects.filter(owner=owner, name="eyes").exists():
        config = ModelConfig(owner=owner, name="eyes", provider="anthropic", model="m")
        config.base_url = "http://127.0.0.1:9"
        config.set_api_key("sk-test-key-abcdefgh")
        config.save()
    agent = (
        make_agent(owner, "looker", model="eyes")
        if not owner.agents.exists()
        else owner.agents.get()
    )
    return make_session(owner, agent)


def attach(owner: User, session: Session, data: bytes) -> str:
    upload = SimpleUploadedFile("picture.png", data, content_type="image/png")
    body = {"text": "look", "files": [upload]}
    path = f"/api/sessions/{session.pk}/messages/"
    response = client_for(owner).post(path, body, format="multipart")
    assert response.status_code == 202, response.content
    return blob_id_of(data)


def delete(owner: User, session: Session) -> None:
    assert client_for(owner).delete(f"/api/sessions/{session.pk}/").status_code == 204


def stored(blob_id: str) -> bool:
    return default_storage.exists(files.blob_path(blob_id))


def served(owner: User, blob_id: str) -> bytes | None:
    """The file as its owner's browser gets it (``None`` if not served)."""
    browser = Client()
    browser.force_login(owner)
    response = browser.get(f"/files/{blob_id}/")
    return b"".join(response) if response.status_code == 200 else None  # type: ignore[arg-type]


def later() -> Any:
    return timezone.now() + LATER


def test_a_deleted_session_s_files_go_and_files_still_named_stay(ada: User, bob: User) -> None:
    gone, kept = looking_session(ada), looking_session(ada)
    red = attach(ada, gone, RED)
    blue = attach(ada, kept, BLUE)
    shared = attach(bob, looking_session(bob), RED)  # the same bytes, in bob's session
    assert shared == red
    delete(ada, gone)

    swept = sweep(GRACE, now=later())

    assert swept == Swept(uploads=1, blobs=0, strays=0)
    assert not Upload.objects.filter(owner=ada, blob_id=red).exists()
    assert Upload.objects.filter(owner=ada, blob_id=blue).exists()
    assert stored(red) and stored(blue)  # bob's session still names the red one

    delete(bob, Session.objects.get(owner=bob))
    assert sweep(GRACE, now=later()) == Swept(uploads=1, blobs=1, strays=0)
    assert not stored(red) and not Blob.objects.filter(pk=red).exists()
    assert stored(blue)
    assert served(ada, blue) == BLUE


def test_nothing_used_within_the_grace_period_is_swept(ada: User) -> None:
    session = looking_session(ada)
    red = attach(ada, session, RED)
    delete(ada, session)

    assert sweep(GRACE) == Swept(uploads=0, blobs=0, strays=0)
    assert stored(red) and Upload.objects.filter(blob_id=red).exists()


def test_bytes_stored_for_a_message_not_yet_saved_are_kept_within_the_grace(ada: User) -> None:
    # What a sweep sees mid-upload: the rows and bytes, and no event naming them yet.
    with transaction.atomic():
        [part] = files.store(ada, [files.Checked("a.png", RED, "image/png")])

    assert sweep(GRACE) == Swept(uploads=0, blobs=0, strays=0)
    assert stored(part.blob_id)
    assert sweep(GRACE, now=later()) == Swept(uploads=1, blobs=1, strays=0)
    assert not stored(part.blob_id)


def test_bytes_swept_are_stored_again_when_a_message_attaches_them(ada: User) -> None:
    first = looking_session(ada)
    red = attach(ada, first, RED)
    delete(ada, first)
    assert sweep(GRACE, now=later()).blobs == 1

    attach(ada, looking_session(ada), RED)

    assert stored(red) and Blob.objects.filter(pk=red).exists()
    assert served(ada, red) == RED


def test_a_stray_file_without_a_row_goes_once_older_than_the_grace(ada: User) -> None:
    stray = blob_id_of(b"left by a failed transaction")
    default_storage.save(files.blob_path(stray), ContentFile(b"left by a failed transaction"))

    assert sweep(GRACE).strays == 0 and stored(stray)
    assert sweep(GRACE, now=later()).strays == 1 and not stored(stray)


def test_the_command_sweeps_and_refuses_a_grace_too_short_to_be_safe(
    ada: User, capsys: pytest.CaptureFixture[str]
) -> None:
    call_command("sweep_files")
    assert "removed 0 upload rows, 0 blobs, 0 stray files" in capsys.readouterr().out
    with pytest.raises(CommandError, match="at least 60"):
        call_command("sweep_files", "--grace-s", "5")
