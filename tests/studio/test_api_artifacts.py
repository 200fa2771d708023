"""A session's artifacts through the API and through runs: versions, downloads served
as attachments under safe types, the size limit and name rules refusing whole, and
every call scoped to the session's owner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from studio import services
from studio.models import Artifact, Event, ModelConfig, RunStatus, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, make_agent, make_session, signed_in

pytestmark = pytest.mark.django_db(transaction=True)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24


@pytest.fixture(autouse=True)
def media(settings: Any, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def stored_files(media: Path) -> list[Path]:
    return [p for p in media.rglob("*") if p.is_file()] if media.exists() else []


def url(session: Session, tail: str = "") -> str:
    return f"/api/sessions/{session.pk}/artifacts/{tail}"


def upload(user: User, session: Session, name: str, data: bytes, content_type: str = "") -> Any:
    body: dict[str, Any] = {"name": name, "file": SimpleUploadedFile("f", data)}
    if content_type:
        body["content_type"] = content_type
    return client_for(user).post(url(session), body, format="multipart")


def test_uploads_make_versions_and_the_list_shows_each_names_newest(ada: User) -> None:
    session = make_session(ada)
    assert upload(ada, session, "report.md", b"# one", "text/markdown").status_code == 201
    second = upload(ada, session, "report.md", b"# two", "text/markdown")
    assert second.status_code == 201 and second.json()["version"] == 2
    upload(ada, session, "chart.png", PNG)
    listed = client_for(ada).get(url(session)).json()
    assert [(a["name"], a["version"], a["served_type"]) for a in listed] == [
        ("chart.png", 1, "image/png"),
        ("report.md", 2, "text/plain; charset=utf-8"),
    ]
    versions = client_for(ada).get(url(session, "report.md/versions/")).json()
    assert [(v["version"], v["size"], v["content_type"]) for v in versions] == [
        (2, 5, "text/markdown"),
        (1, 5, "text/markdown"),
    ]
    old = client_for(ada).get(url(session, "report.md/download/"), {"version": 1})
    assert old.content == b"# one"
    assert client_for(ada).get(versions[0]["download_url"]).content == b"# two"


def test_downloads_are_attachments_never_sniffed_and_markup_is_plain_text(ada: User) -> None:
    session = make_session(ada)
    page = b"<!doctype html><script>alert(1)</script>"
    upload(ada, session, 'x"<b>.html', page, "text/html")
    upload(ada, session, "logo.svg", b"<svg onload=alert(1)></svg>", "image/svg+xml")
    upload(ada, session, "blob.bin", b"\x00\x01\xff", "application/x-anything")
    upload(ada, session, "chart.png", PNG)
    client = client_for(ada)
    html = client.get(url(session, 'x"<b>.html/download/'), {"inline": "1"})
    assert html.content == page
    assert html["Content-Type"] == "text/plain; charset=utf-8"
    assert html["Content-Disposition"].startswith("attachment;")
    assert html["X-Content-Type-Options"] == "nosniff"
    assert html["Content-Security-Policy"].startswith("sandbox;")
    svg = client.get(url(session, "logo.svg/download/"), {"inline": "1"})
    assert svg["Content-Type"] == "text/plain; charset=utf-8"
    assert svg["Content-Disposition"].startswith("attachment;")
    binary = client.get(url(session, "blob.bin/download/"))
    assert binary["Content-Type"] == "application/octet-stream"
    image = client.get(url(session, "chart.png/download/"), {"inline": "1"})
    assert image["Content-Type"] == "image/png"
    assert image["Content-Disposition"].startswith("inline;")
    assert client.get(url(session, "chart.png/download/"))["Content-Disposition"].startswith(
        "attachment;"
    )


def test_an_oversize_artifact_is_refused_and_nothing_is_stored(
    ada: User, settings: Any, media: Path
) -> None:
    settings.STUDIO_ARTIFACT_MAX_BYTES = 8
    session = make_session(ada)
    refused = upload(ada, session, "big.txt", b"x" * 9)
    assert refused.status_code == 400
    assert refused.json()["errors"][0]["code"] == "file_too_large"
    assert "at most 8 bytes" in str(refused.json()), refused.json()
    assert not Artifact.objects.exists() and stored_files(media) == []


@pytest.mark.parametrize("name", ["../etc/passwd", "a\\b", "tab\there", ".."])
def test_unusable_names_are_refused_and_nothing_is_stored(
    ada: User, media: Path, name: str
) -> None:
    session = make_session(ada)
    refused = upload(ada, session, name, b"data")
    assert refused.status_code == 400, refused.content
    assert refused.json()["errors"][0]["path"] == "name"
    assert not Artifact.objects.exists() and stored_files(media) == []


def test_another_users_session_and_its_artifacts_are_not_found(ada: User, bob: User) -> None:
    session = make_session(ada)
    upload(ada, session, "secret.txt", b"ada's")
    for path in ["", "secret.txt/versions/", "secret.txt/download/"]:
        assert client_for(bob).get(url(session, path)).status_code == 404
    assert upload(bob, session, "planted.txt", b"bob's").status_code == 404
    assert client_for(None).get(url(session)).status_code == 401
    assert list(Artifact.objects.values_list("name", flat=True)) == ["secret.txt"]
    assert client_for(ada).get(url(session, "nope.txt/download/")).status_code == 404
    assert (
        client_for(ada).get(url(session, "secret.txt/download/"), {"version": 9}).status_code == 404
    )


def test_deleting_the_session_removes_the_artifacts_bytes(ada: User, media: Path) -> None:
    session = make_session(ada)
    upload(ada, session, "a.txt", b"a")
    assert len(stored_files(media)) == 1
    services.delete_session(session)
    assert not Artifact.objects.exists() and stored_files(media) == []


def test_the_schema_documents_the_artifacts_api(ada: User) -> None:
    schema = client_for(ada).get("/api/schema/", {"format": "json"}).json()
    assert {
        "/api/sessions/{id}/artifacts/",
        "/api/sessions/{id}/artifacts/{name}/versions/",
        "/api/sessions/{id}/artifacts/{name}/download/",
    } <= set(schema["paths"])


def _call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "args": args}]}


async def test_a_run_saves_artifacts_through_the_tools_and_the_timeline_records_it(
    ada: User,
) -> None:
    def setup() -> Session:
        make_agent(ada, tools=[{"name": "artifacts"}])
        script = [
            _call("save_artifact", name="report.md", content="# v1", content_type="text/markdown"),
            _call("save_artifact", name="report.md", content="# v2", content_type="text/markdown"),
            _call("load_artifact", name="report.md", version=1),
            {"text": "Read back: {last_tool_result}"},
        ]
        ModelConfig.objects.filter(owner=ada).update(options={"script": script})
        return make_session(ada)

    session = await sync_to_async(setup)()
    run = await sync_to_async(services.start_run)(session, "write the report")
    finished = await execute_run(run)
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    responses = [
        e.payload async for e in Event.objects.filter(session=session, type="tool_response")
    ]
    deltas = [p.get("actions", {}).get("artifact_delta") for p in responses]
    assert deltas[:2] == [{"report.md": 1}, {"report.md": 2}]
    answers = [e.payload async for e in Event.objects.filter(session=session, type="agent_message")]
    assert answers[-1]["parts"][0]["text"] == "Read back: # v1"
    listed = await sync_to_async(client_for(ada).get)(url(session))
    assert [(a["name"], a["version"]) for a in listed.json()] == [("report.md", 2)]


def test_the_session_page_shows_artifacts_as_text_and_only_to_their_owner(
    ada: User, bob: User
) -> None:
    session = make_session(ada)
    name = "<img src=x onerror=alert(1)>.html"
    assert upload(ada, session, name, b"<script>alert(1)</script>", "text/html").status_code == 201
    upload(ada, session, "chart.png", PNG)
    for path in [f"/sessions/{session.pk}/", f"/sessions/{session.pk}/artifacts/"]:
        html = signed_in(ada).get(path).content.decode()
        assert "&lt;img src=x onerror=alert(1)&gt;.html" in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
        assert (
            f"/api/sessions/{session.pk}/artifacts/chart.png/download/?version=1&amp;inline=1"
            in html
        )
        assert signed_in(bob).get(path).status_code == 404
