"""Hostile and broken bundles are refused with a clear error (400, a code and the path
of the problem) and nothing of them is stored: too large, zip bombs and escaping member
names, not JSON, too deep, unknown versions, schema errors, secrets in model
configurations, seq gaps, unknown event types, a failure half-way through storing."""

from __future__ import annotations

import copy
import io
import json
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from agents_core import events as core_events
from studio import bundles
from studio.bundles import checks, imports
from studio.models import Agent, ApprovalDecision, Event, ModelConfig, Run, Session
from studio.session_service import append_event_sync
from tests.studio.conftest import client_for, make_agent, make_session, signed_in

pytestmark = pytest.mark.django_db

MARKUP = "<script>alert(1)</script>"


@pytest.fixture
def bundle(ada: User) -> dict[str, Any]:
    """A small real bundle of Ada's: a user message, a tool call and its result, an
    answer, one run, one approval decision."""
    session = make_session(ada, title=f"t {MARKUP}")
    invocation = core_events.new_id()
    said = core_events.Event(
        type=core_events.EventType.USER_MESSAGE,
        author="user",
        invocation_id=invocation,
        session_id=session.key,
        parts=[core_events.TextPart(text=f"hi {MARKUP}")],
    )
    answer = core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        author="helper",
        invocation_id=invocation,
        session_id=session.key,
        parts=[core_events.TextPart(text=f"hello {MARKUP}")],
    )
    for event in (said, answer):
        append_event_sync(session.key, event)
    run = Run.objects.create(
        session=session, invocation_id=invocation, message="hi", status="succeeded", start_seq=0
    )
    ApprovalDecision.objects.create(
        session=session,
        run=run,
        call_id="c1",
        tool="calculator",
        decision="approve",
        channel="page",
        decided_by_name="ada",
        args_hash="0" * 64,
        args_shown={"expression": MARKUP},
    )
    exported = bundles.export_bundle(Session.objects.get(pk=session.pk))
    return dict(json.loads(bundles.bundle_json(exported)))


def counts(user: User) -> tuple[int, ...]:
    return (
        Session.objects.filter(owner=user).count(),
        Agent.objects.filter(owner=user).count(),
        ModelConfig.objects.filter(owner=user).count(),
        Event.objects.filter(session__owner=user).count(),
        Run.objects.filter(session__owner=user).count(),
        ApprovalDecision.objects.filter(session__owner=user).count(),
    )


def post(user: User, name: str, data: bytes) -> Any:
    file = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    return client_for(user).post("/api/bundles/import/", {"file": file}, format="multipart")


def refused(user: User, name: str, data: bytes, code: str) -> dict[str, Any]:
    before = counts(user)
    response = post(user, name, data)
    assert response.status_code == 400, response.content
    body: dict[str, Any] = response.json()
    assert body["errors"][0]["code"] == code, body
    assert counts(user) == before
    return body


def as_json(document: Any) -> bytes:
    return json.dumps(document).encode()


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_good_bundle_is_imported_and_its_markup_stays_text(
    bundle: dict[str, Any], bob: User
) -> None:
    response = post(bob, "b.json", as_json(bundle))
    assert response.status_code == 201, response.content
    session = Session.objects.get(pk=response.json()["id"])
    assert session.owner == bob and session.read_only and session.title == f"t {MARKUP}"
    assert [e.text for e in session.events.order_by("seq")] == [f"hi {MARKUP}", f"hello {MARKUP}"]
    assert ApprovalDecision.objects.get(session=session).args_shown == {"expression": MARKUP}


CHANGES: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("version 3", lambda b: b.update(version=3), "bundle_version", "bundle.version"),
    ("another format", lambda b: b.update(format="x"), "bundle_format", "bundle"),
    (
        "a bad run status",
        lambda b: b["runs"][0].update(status="bogus"),
        "bundle_schema",
        "bundle.runs.0.status",
    ),
    ("an unknown field", lambda b: b.update(extra=1), "bundle_schema", "bundle.extra"),
    (
        "a seq gap",
        lambda b: b["events"][1].update(seq=3),
        "bundle_seq_gap",
        "bundle.events.1.seq",
    ),
    (
        "an unknown event type",
        lambda b: b["events"][1].update(type="exploit"),
        "bundle_bad_event",
        "bundle.events.1.type",
    ),
    (
        "two events of one id",
        lambda b: b["events"][1].update(id=b["events"][0]["id"]),
        "bundle_bad_event",
        "bundle.events.1.id",
    ),
    (
        "an approval of no run",
        lambda b: b["approvals"][0].update(run="nope"),
        "bundle_bad_approval",
        "bundle.approvals.0.run",
    ),
    (
        "an api key",
        lambda b: b["agent"]["model_configs"][0].update(api_key="abc"),
        "bundle_has_secret",
        "bundle.agent.model_configs.0.api_key",
    ),
    (
        "a key's hint",
        lambda b: b["agent"]["model_configs"][0].update(api_key_hint="...abcd"),
        "bundle_has_secret",
        "bundle.agent.model_configs.0.api_key_hint",
    ),
    (
        "a header in the options",
        lambda b: b["agent"]["model_configs"][0]["options"].update(
            headers={"Authorization": "Bearer x"}
        ),
        "bundle_has_secret",
        "bundle.agent.model_configs.0.options.headers.Authorization",
    ),
    (
        "a key-looking value",
        lambda b: b["agent"]["model_configs"][0].update(model="sk-abcdefghijklmnopqrstu"),
        "bundle_has_secret",
        "bundle.agent.model_configs.0.model",
    ),
    (
        "a password in the base URL",
        lambda b: b["agent"]["model_configs"][0].update(base_url="https://u:p@example.com/v1"),
        "bundle_has_secret",
        "bundle.agent.model_configs.0.base_url",
    ),
    (
        "a spec that is no spec",
        lambda b: b["agent"]["spec"].update(type="rocket"),
        "bundle_bad_spec",
        "bundle.agent.spec.type",
    ),
]


@pytest.mark.parametrize(
    ("change", "code", "path"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES]
)
def test_a_broken_bundle_is_refused_at_its_path(
    bundle: dict[str, Any],
    bob: User,
    change: Callable[[dict[str, Any]], None],
    code: str,
    path: str,
) -> None:
    broken = copy.deepcopy(bundle)
    change(broken)
    body = refused(bob, "b.json", as_json(broken), code)
    assert body["errors"][0]["path"] == path


def test_the_version_error_says_which_versions_are_read(bundle: dict[str, Any], bob: User) -> None:
    body = refused(bob, "b.json", as_json({**bundle, "version": 3}), "bundle_version")
    assert "version 3 is not supported here (this Studio reads 1, 2)" in body["detail"]


def test_not_json_too_deep_or_not_utf8(bob: User) -> None:
    refused(bob, "b.json", b"{nope", "bundle_not_json")
    refused(bob, "b.json", b"\xff\xfe", "bundle_not_json")
    refused(bob, "b.json", b"[" * 100_000 + b"]" * 100_000, "bundle_too_deep")
    refused(bob, "b.json", b"[" * 100 + b"]" * 100, "bundle_too_deep")
    refused(bob, "b.json", b"[1, 2]", "bundle_schema")


def test_nul_characters_are_refused(bundle: dict[str, Any], bob: User) -> None:
    bundle["session"]["title"] = "a\x00b"
    body = refused(bob, "b.json", as_json(bundle), "bundle_not_json")
    assert "NUL" in body["detail"]


def test_too_large(bundle: dict[str, Any], bob: User, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks, "MAX_BYTES", 1_000)
    refused(bob, "b.json", as_json(bundle), "bundle_too_large")


def test_a_zip_bomb_is_refused_before_it_is_unpacked(bob: User) -> None:
    bomb = zipped({"bundle.json": b" " * (checks.MAX_BYTES + 1)})
    assert len(bomb) < 100_000
    refused(bob, "b.studio-run.zip", bomb, "bundle_too_large")


@pytest.mark.parametrize(
    "members",
    [
        {"../bundle.json": b"{}"},
        {"/etc/bundle.json": b"{}"},
        {"bundle.json": b"{}", "..\\evil": b"x"},
        {"bundle.json": b"{}", "blob": b"x"},
        {"other.json": b"{}"},
        {f"f{i}": b"" for i in range(20)},
    ],
    ids=["parent", "absolute", "backslash", "extra member", "no bundle", "many"],
)
def test_zip_members_that_escape_or_do_not_belong(bob: User, members: dict[str, bytes]) -> None:
    refused(bob, "b.zip", zipped(members), "bundle_bad_zip")


def test_not_a_zip(bob: User) -> None:
    refused(bob, "b.studio-run.zip", b"PK\x03\x04broken", "bundle_bad_zip")


def test_a_zipped_bundle_is_imported(bundle: dict[str, Any], bob: User) -> None:
    response = post(bob, "b.studio-run.zip", zipped({"bundle.json": as_json(bundle)}))
    assert response.status_code == 201, response.content


def test_a_failure_half_way_stores_nothing(
    bundle: dict[str, Any], bob: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any) -> None:
        raise checks.refuse("bundle_bad_approval", "failed half-way")

    monkeypatch.setattr(imports, "_approvals", fail)
    refused(bob, "b.json", as_json(bundle), "bundle_bad_approval")


def test_imported_names_are_free_and_valid(bundle: dict[str, Any], bob: User) -> None:
    make_agent(bob, name="helper-imported")
    first = post(bob, "b.json", as_json(bundle)).json()
    assert first["agent_name"] == "helper-imported-2"
    odd = copy.deepcopy(bundle)
    odd["agent"]["name"] = MARKUP
    assert (
        post(bob, "b.json", as_json(odd)).json()["agent_name"]
        == "_script_alert_1___script_-imported"
    )


def test_an_active_run_is_imported_interrupted(bundle: dict[str, Any], bob: User) -> None:
    bundle["runs"][0]["status"] = "running"
    bundle["session"]["status"] = "running"
    session = Session.objects.get(pk=post(bob, "b.json", as_json(bundle)).json()["id"])
    assert session.status == "interrupted"
    assert session.runs.get().status == "interrupted"


def test_imported_spending_is_not_the_importers(bundle: dict[str, Any], bob: User) -> None:
    """The events keep their recorded cost in the payload, but no cost column: no
    roll-up counts another Studio's spending as the importer's."""
    session = Session.objects.get(pk=post(bob, "b.json", as_json(bundle)).json()["id"])
    assert not session.events.filter(cost__isnull=False).exists()
    assert not session.events.filter(usage__isnull=False).exists()


def test_an_imported_session_is_the_importers_only(
    bundle: dict[str, Any], ada: User, bob: User
) -> None:
    session_id = post(bob, "b.json", as_json(bundle)).json()["id"]
    for url in (f"/api/sessions/{session_id}/", f"/api/sessions/{session_id}/bundle/"):
        assert client_for(ada).get(url).status_code == 404
        assert client_for(bob).get(url).status_code == 200
    assert client_for(None).post("/api/bundles/import/", {}).status_code == 401


def test_an_imported_session_exports_again_as_its_importers(
    bundle: dict[str, Any], bob: User
) -> None:
    """Re-exported, it names the importer's stand-in models, never the exporter's keys."""
    session_id = post(bob, "b.json", as_json(bundle)).json()["id"]
    again = client_for(bob).get(f"/api/sessions/{session_id}/bundle/").json()
    assert [e["id"] for e in again["events"]] == [e["id"] for e in bundle["events"]]
    assert all(c["name"].endswith("-imported") for c in again["agent"]["model_configs"])
    assert post(bob, "again.json", as_json(again)).status_code == 201


def test_fork_lineage_travels_as_ids_only(ada: User, bob: User) -> None:
    """A fork's bundle says where it was forked from (ids and a seq), never the parent's
    data; the importer keeps it in ``imported_from``."""
    from studio.services.forks import fork_session

    parent = make_session(ada, title="parent secret title")
    invocation = core_events.new_id()
    for text in ("one", "two"):
        append_event_sync(
            parent.key,
            core_events.Event(
                type=core_events.EventType.USER_MESSAGE,
                author="user",
                invocation_id=invocation,
                session_id=parent.key,
                parts=[core_events.TextPart(text=text)],
            ),
        )
    fork = fork_session(parent, 1)
    document = json.loads(bundles.bundle_json(bundles.export_bundle(fork)))
    assert document["fork"] == {
        "parent_session": str(parent.pk),
        "fork_seq": 1,
        "fork_event_id": fork.fork_event_id,
    }
    assert str(parent.key) not in json.dumps(document["events"])  # its copies are the fork's
    assert [e["text"] if "text" in e else e["parts"][0]["text"] for e in document["events"]] == [
        "one"
    ]
    imported = post(bob, "fork.json", as_json(document)).json()
    assert imported["imported_from"]["fork"]["fork_seq"] == 1
    assert imported["parent"] is None and imported["fork_seq"] is None


def test_the_imported_session_page_says_read_only_and_escapes_markup(
    bundle: dict[str, Any], bob: User
) -> None:
    session_id = post(bob, "b.json", as_json(bundle)).json()["id"]
    page = signed_in(bob).get(f"/sessions/{session_id}/").content.decode()
    assert "imported · read-only" in page
    assert "Continue in playground" not in page
    assert f"/api/sessions/{session_id}/bundle/?zip=1" in page
    assert "<script>alert(1)</script>" not in page
    assert "t &lt;script&gt;alert(1)&lt;/script&gt;" in page
    listed = signed_in(bob).get("/sessions/").content.decode()
    assert 'action="/sessions/import/"' in listed and "<script>alert(1)" not in listed


def test_the_import_form_imports_or_says_why(bundle: dict[str, Any], bob: User) -> None:
    client = signed_in(bob)
    file = SimpleUploadedFile("b.json", as_json(bundle))
    response = client.post("/sessions/import/", {"bundle": file})
    session = Session.objects.get(owner=bob)
    assert response.status_code == 302 and response["Location"] == f"/sessions/{session.pk}/"
    broken = SimpleUploadedFile("b.json", as_json({**bundle, "version": 9}))
    response = client.post("/sessions/import/", {"bundle": broken}, follow=True)
    assert "Import refused: bundle version 9 is not supported here" in response.content.decode()
    assert Session.objects.filter(owner=bob).count() == 1
    assert client.get("/sessions/import/").status_code == 405
