"""``manage.py export_bundle`` and ``import_bundle``: a run moved between Studios from
the shell, with every check of the API (a refused bundle says why and stores nothing)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from agents_core import events as core_events
from studio.models import Session
from studio.session_service import append_event_sync
from tests.studio.conftest import make_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def session(ada: User) -> Session:
    made = make_session(ada, title="moved <b>by hand</b>")
    said = core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        author="user",
        invocation_id=core_events.new_id(),
        session_id=made.key,
        parts=[core_events.TextPart(text="hello")],
    )
    append_event_sync(made.key, said)
    return made


def test_export_then_import_from_the_shell(session: Session, bob: User, tmp_path: Path) -> None:
    path = tmp_path / "run.studio-run.json"
    out = io.StringIO()
    call_command("export_bundle", str(session.pk), "-o", str(path), stdout=out)
    assert f"wrote {path}" in out.getvalue()
    assert json.loads(path.read_bytes())["session"]["id"] == str(session.pk)
    out = io.StringIO()
    call_command("import_bundle", str(path), "--user", "bob", stdout=out, stderr=io.StringIO())
    copy = Session.objects.get(pk=out.getvalue().strip())
    assert copy.owner == bob and copy.read_only and copy.title == "moved <b>by hand</b>"
    assert [e.text for e in copy.events.order_by("seq")] == ["hello"]


def test_export_zipped(session: Session, tmp_path: Path) -> None:
    path = tmp_path / "run.studio-run.zip"
    call_command("export_bundle", str(session.pk), "--zip", "-o", str(path), stdout=io.StringIO())
    with zipfile.ZipFile(path) as archive:
        assert archive.namelist() == ["bundle.json"]


def test_a_refused_bundle_says_why_and_stores_nothing(
    session: Session, bob: User, tmp_path: Path
) -> None:
    path = tmp_path / "b.json"
    call_command("export_bundle", str(session.pk), "-o", str(path), stdout=io.StringIO())
    document = json.loads(path.read_bytes())
    path.write_text(json.dumps({**document, "version": 9}))
    with pytest.raises(CommandError, match=r"import refused \(bundle_version\): bundle.version"):
        call_command("import_bundle", str(path), "--user", "bob", stdout=io.StringIO())
    assert not Session.objects.filter(owner=bob).exists()


def test_unknown_users_sessions_and_files(tmp_path: Path, bob: User) -> None:
    with pytest.raises(CommandError, match="no session 'nope'"):
        call_command("export_bundle", "nope", stdout=io.StringIO())
    with pytest.raises(CommandError, match="no user 'eve'"):
        call_command("import_bundle", str(tmp_path / "x.json"), "--user", "eve")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_bundle", str(tmp_path / "missing.json"), "--user", "bob")
