"""Issue 26's round trip: a real run with a tool call that waited for (and got) a
person's approval, exported as a bundle, its owner then deleted with everything they
had, imported by another user: the timeline (every event's wire JSON) and the
waterfall (the spans) are the original's, the session takes no new message, and a
replay of the imported run reproduces it on its recorded outputs."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from agents_core import events as core_events
from agents_core.replay import by_branch, comparable, is_divergence
from studio import live, runs, services
from studio.bundles import json_schema
from studio.models import Agent, ApprovalDecision, Event, ModelConfig, Run, Session
from tests.studio.conftest import client_for, make_session
from tests.support.live import (
    ENDED,
    eventually,
    run_manager,  # noqa: F401  (an autouse fixture)
    scripted_agent,
)

pytestmark = pytest.mark.django_db(transaction=True)

MARKUP = "<script>alert(1)</script>"
SCRIPT = [
    {"text": "", "tool_calls": [{"name": "calculator", "args": {"expression": "2 + 3"}}]},
    {"text": "The answer is {last_tool_result}. " + MARKUP},
]


@pytest.fixture(autouse=True)
async def executing() -> None:
    runs.executor().start()


async def ended(run_id: Any) -> Run:
    async def check() -> Run | None:
        run = await Run.objects.aget(pk=run_id)
        return run if run.status in ENDED else None

    return await eventually(check)


async def approved_run(ada: User) -> tuple[Session, Run]:
    """Ada's run whose calculator call waited for her approval, approved, succeeded."""
    tools = [{"name": "calculator", "requires_approval": True}]
    agent = await sync_to_async(scripted_agent)(ada, "careful", SCRIPT, tools=tools)
    session = await sync_to_async(make_session)(ada, agent, title=f"Sums {MARKUP}")
    run = await sync_to_async(services.start_run)(session, f"what is 2 + 3? {MARKUP}")

    async def parked() -> Run | None:
        return await Run.objects.filter(pk=run.pk, status="waiting").afirst()

    await eventually(parked)
    request = (
        await session.events.filter(type="approval_request")
        .values_list("payload", flat=True)
        .aget()
    )
    body = live.ApprovalBody(
        call_id=request["approval"]["call_id"],
        args_hash=request["approval"]["args_hash"],
        decision="approve",
    )
    await services.decide_approval(session, body, user=ada, via="api")
    run = await ended(run.pk)
    assert run.status == "succeeded"
    return session, run


@sync_to_async
def payloads(session_id: Any) -> list[dict[str, Any]]:
    rows = Event.objects.filter(session_id=session_id).order_by("seq")
    return [dict(payload) for payload in rows.values_list("payload", flat=True)]


def without_session(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "session_id"} for e in events]


@sync_to_async
def spans_of(user: User, session_id: Any) -> list[Any]:
    response = client_for(user).get(f"/api/sessions/{session_id}/spans/")
    assert response.status_code == 200, response.content
    return list(response.json()["spans"])


@sync_to_async
def get(user: User, url: str) -> Any:
    return client_for(user).get(url)


@sync_to_async
def upload(user: User, name: str, data: bytes) -> Any:
    file = SimpleUploadedFile(name, data, content_type="application/octet-stream")
    return client_for(user).post("/api/bundles/import/", {"file": file}, format="multipart")


@sync_to_async
def post(user: User, url: str, body: dict[str, Any]) -> Any:
    return client_for(user).post(url, body, format="json")


@sync_to_async
def forget(user: User) -> None:
    """Delete the user and all they had, as a fresh database would not have them."""
    user.delete()


async def test_round_trip_export_import_replay(ada: User, bob: User) -> None:
    session, run = await approved_run(ada)
    timeline = await payloads(session.pk)
    waterfall = await spans_of(ada, session.pk)
    assert any(span["kind"] == "human" for span in waterfall)  # the wait for approval
    exported = await get(ada, f"/api/sessions/{session.pk}/bundle/")
    assert exported.status_code == 200
    assert exported["Content-Type"] == "application/json"
    zipped = await get(ada, f"/api/sessions/{session.pk}/bundle/?zip=1")
    assert zipped["Content-Type"] == "application/zip"
    bundle = json.loads(exported.content)
    assert (bundle["format"], bundle["version"]) == ("studio-run-bundle", 2)
    assert [a["decision"] for a in bundle["approvals"]] == ["approve"]
    assert bundle["agent"]["tool_schemas"][0]["tools"][0]["name"] == "calculator"
    [config] = bundle["agent"]["model_configs"]
    assert config["name"] == "careful_model" and config["provider"] == "scripted"
    assert "api_key" not in json.dumps(bundle) and "ciphertext" not in json.dumps(bundle)
    await forget(ada)

    imported = await upload(bob, "careful.studio-run.zip", zipped.content)
    assert imported.status_code == 201, imported.content
    copy_id = imported.json()["id"]
    assert imported.json()["imported_from"]["session"] == str(session.pk)
    assert imported.json()["title"] == f"Sums {MARKUP}"  # stored as text, as it was
    assert without_session(await payloads(copy_id)) == without_session(timeline)
    assert await spans_of(bob, copy_id) == waterfall
    assert await ApprovalDecision.objects.filter(session_id=copy_id, decision="approve").aexists()
    agent = await Agent.objects.aget(owner=bob)
    assert agent.name == "careful-imported"
    stand_in = await ModelConfig.objects.aget(owner=bob)
    assert stand_in.provider == "scripted" and not stand_in.has_api_key

    refused = await post(bob, f"/api/sessions/{copy_id}/messages/", {"text": "more"})
    assert refused.status_code == 409 and refused.json()["code"] == "session_read_only"
    forked = await post(bob, f"/api/sessions/{copy_id}/forks/", {"seq": 1})
    assert forked.status_code == 409 and forked.json()["code"] == "session_read_only"

    copied_run = await Run.objects.aget(session_id=copy_id)
    replayed = await post(bob, f"/api/runs/{copied_run.pk}/replay/", {})
    assert replayed.status_code == 202, replayed.content
    replay = await ended(replayed.json()["id"])
    assert replay.status == "succeeded"
    replay_events = [core_events.Event.model_validate(p) for p in await payloads(replay.session_id)]
    original = [core_events.Event.model_validate(p) for p in timeline]
    turn = [e for e in replay_events if e.invocation_id == replay.invocation_id]
    recorded = [e for e in original if e.invocation_id == run.invocation_id]
    assert not any(is_divergence(e) for e in turn)
    assert by_branch(comparable(turn)) == by_branch(comparable(recorded))


async def test_another_user_cannot_export(ada: User, bob: User) -> None:
    session, _ = await approved_run(ada)
    assert (await get(bob, f"/api/sessions/{session.pk}/bundle/")).status_code == 404
    assert (await get(bob, f"/api/sessions/{session.pk}/bundle/?zip=1")).status_code == 404


def test_the_shipped_schema_is_the_generated_one() -> None:
    from pathlib import Path

    shipped = json.loads((Path(__file__).parents[2] / "docs" / "bundle.schema.json").read_text())
    assert shipped == json_schema(), "regenerate: python manage.py bundle_schema"


def test_the_zip_holds_only_the_bundle() -> None:
    from studio.bundles import bundle_zip
    from studio.bundles.format import Bundle

    bundle = Bundle.model_validate(
        {
            "format": "studio-run-bundle",
            "version": 1,
            "exported_at": "2026-01-01T00:00:00Z",
            "session": {
                "id": "x",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
            },
        }
    )
    with zipfile.ZipFile(io.BytesIO(bundle_zip(bundle))) as archive:
        assert archive.namelist() == ["bundle.json"]
