"""The live timeline websocket on the real ASGI application: backlog then live events,
resume from any seq, access control, bad frames, floods, and runs outliving sockets."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio import live
from studio.asgi import application
from studio.models import Run, RunStatus
from tests.support.live import (
    ENDED,
    eventually,
    latest_run,
    new_session,
    open_socket,
    run_manager,  # noqa: F401  (an autouse fixture)
    run_to_end,
    slow_agent,
    stored,
    watch,
)

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_viewer_gets_the_stored_backlog_then_the_live_events_in_seq_order(
    ada: User,
) -> None:
    session = await new_session(ada)
    first = await watch(application, session, ada)
    assert first.status == {"type": "status", "run": None, "waiting_for": None}
    await run_to_end(first, "hello")
    await first.close()

    viewer = await watch(application, session, ada, after=0)
    backlog = list(viewer.events)
    assert [e["seq"] for e in backlog] == list(range(1, len(backlog) + 1))
    assert backlog == await stored(session)
    assert viewer.run_status == "succeeded"

    await run_to_end(viewer, "again")
    assert viewer.seqs == list(range(1, len(viewer.seqs) + 1))
    assert viewer.events == await stored(session)
    assert viewer.partials, "token chunks stream live"
    for frame in viewer.partials:
        assert frame["event"]["seq"] is None
        assert frame["after_seq"] >= len(backlog)
    run = await latest_run(session)
    assert run is not None and viewer.status is not None
    assert viewer.status["run"]["id"] == str(run.pk)
    assert viewer.status["waiting_for"] is None


async def test_a_batched_viewer_gets_the_same_frames_in_fewer_messages(ada: User) -> None:
    session = await new_session(ada)
    one_by_one = await watch(application, session, ada)
    batched = await watch(application, session, ada, batch=True)
    await run_to_end(one_by_one, "hello")
    await batched.until_ended()
    await run_to_end(one_by_one, "again")
    await batched.until_ended()
    await batched.until(lambda v: len(v.frames) >= len(one_by_one.frames), within=5)

    assert batched.frames == one_by_one.frames
    assert batched.events == await stored(session)
    assert set(one_by_one.messages) == {1}
    assert len(batched.messages) < len(one_by_one.messages), batched.messages

    rejoined = await watch(application, session, ada, after=0, batch=True)
    assert rejoined.events == batched.events
    assert rejoined.messages == [len(rejoined.events) + 1]  # the backlog and the status


async def test_a_batched_backlog_comes_a_page_a_message(ada: User, monkeypatch: Any) -> None:
    session = await new_session(ada)
    viewer = await watch(application, session, ada)
    await run_to_end(viewer, "hello")
    everything = await stored(session)
    page = 4
    monkeypatch.setattr(live.protocol, "PAGE_SIZE", page)
    monkeypatch.setattr(live.reads, "PAGE_SIZE", page)

    rejoined = await watch(application, session, ada, after=0, batch=True)

    assert rejoined.events == everything
    full, rest = divmod(len(everything), page)
    assert rejoined.messages == [page] * full + [rest + 1]  # the last page with the status


async def test_resuming_from_any_seq_sends_exactly_the_events_after_it(ada: User) -> None:
    session = await new_session(ada)
    viewer = await watch(application, session, ada)
    await run_to_end(viewer, "hello")
    await viewer.close()
    everything = await stored(session)
    for after in range(len(everything) + 1):
        resumed = await watch(application, session, ada, after=after)
        assert resumed.events == everything[after:]
        assert resumed.run_status == "succeeded"
        await resumed.close()


@pytest.mark.parametrize(
    ("who", "target", "after", "code"),
    [
        ("anonymous", "own", None, 4401),
        ("anonymous", "own", "x", 4401),
        ("bob", "own", "x", 4404),
        ("bob", "own", None, 4404),
        ("ada", "unknown", None, 4404),
        ("ada", "not-a-uuid", None, 4404),
        ("ada", "own", "-1", 4400),
        ("ada", "own", "x", 4400),
        ("ada", "own", "1", 4400),
        ("ada", "own", "0&batch=2", 4400),
        ("ada", "own", "0&batch=1&batch=1", 4400),
    ],
)
async def test_refused_sockets_close_with_a_code_before_any_frame(
    ada: User, bob: User, who: str, target: str, after: str | None, code: int
) -> None:
    session = await new_session(ada)
    session_id = {"own": session.pk, "unknown": uuid.uuid4(), "not-a-uuid": "abc"}[target]
    user = {"anonymous": None, "ada": ada, "bob": bob}[who]
    communicator, connected = await open_socket(application, session_id, user, after=after)
    assert connected
    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": code}


async def test_another_users_session_closes_exactly_like_one_that_does_not_exist(
    ada: User, bob: User
) -> None:
    # The API answers 404 for both; a different close would tell bob that the id is real.
    session = await new_session(ada)
    closes = []
    for session_id in (session.pk, uuid.uuid4()):
        communicator, connected = await open_socket(application, session_id, bob)
        assert connected
        closes.append(await communicator.receive_output(timeout=5))
    foreign, missing = closes
    assert foreign == missing
    assert missing["code"] == live.CLOSE_NOT_FOUND
    refusals = []
    for session_id in (session.pk, uuid.uuid4()):
        with pytest.raises(live.Refused) as refused:
            await sync_to_async(live.authorise)(bob, str(session_id), b"")
        refusals.append((refused.value.close_code, str(refused.value)))
    assert refusals[0] == refusals[1] == (live.CLOSE_NOT_FOUND, "no such session")


async def test_a_socket_from_another_origin_is_refused(ada: User) -> None:
    session = await new_session(ada)
    _, connected = await open_socket(application, session.pk, ada, origin=b"http://evil.example")
    assert not connected


@pytest.mark.parametrize(
    ("frame", "detail"),
    [
        ("not json", "Invalid JSON"),
        (json.dumps({"type": "shout"}), "type"),
        (json.dumps({"type": "cancel", "extra": 1}), "extra"),
        (json.dumps({"type": "user_message"}), "text"),
        (json.dumps({"type": "user_message", "text": ""}), "text"),
        (json.dumps({"type": "approval", "call_id": "c", "args_hash": "x", "decision": "ok"}), ""),
        (json.dumps([1, 2]), ""),
    ],
)
async def test_a_bad_frame_gets_an_error_frame_and_the_socket_stays_open(
    ada: User, frame: str, detail: str
) -> None:
    session = await new_session(ada)
    viewer = await watch(application, session, ada)
    await viewer.communicator.send_to(text_data=frame)
    error = await viewer.receive()
    assert error["type"] == "error"
    assert error["code"] == "invalid"
    assert detail in error["detail"]
    await viewer.send({"type": "cancel"})
    assert (await viewer.receive())["code"] == "no_active_run"


async def test_a_binary_frame_is_refused_with_an_error_frame(ada: User) -> None:
    viewer = await watch(application, await new_session(ada), ada)
    await viewer.communicator.send_to(bytes_data=b"\x00\x01")
    assert (await viewer.receive())["code"] == "invalid"


async def test_an_oversize_frame_closes_the_socket(ada: User, settings: Any) -> None:
    settings.STUDIO_WS_MAX_MESSAGE_BYTES = 1024
    viewer = await watch(application, await new_session(ada), ada)
    await viewer.send({"type": "user_message", "text": "x" * 2000})
    closed = await viewer.communicator.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": live.CLOSE_TOO_BIG}


async def test_a_flood_of_frames_closes_the_socket(ada: User, settings: Any) -> None:
    settings.STUDIO_WS_BURST = 5
    settings.STUDIO_WS_RATE_PER_S = 0.1
    viewer = await watch(application, await new_session(ada), ada)
    for _ in range(6):
        await viewer.send({"type": "cancel"})
    outputs = [await viewer.communicator.receive_output(timeout=5) for _ in range(6)]
    assert outputs[-1] == {"type": "websocket.close", "code": live.CLOSE_FLOOD}
    assert all(json.loads(o["text"])["code"] == "no_active_run" for o in outputs[:5])


async def test_a_run_outlives_the_socket_that_started_it(ada: User) -> None:
    agent = await sync_to_async(slow_agent)(ada, words=30)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until(lambda v: bool(v.partials))
    await viewer.close()

    async def ended() -> Run | None:
        run = await latest_run(session)
        return run if run is not None and run.status in ENDED else None

    run = await eventually(ended)
    assert run.status == RunStatus.SUCCEEDED
    later = await watch(application, session, ada)
    assert later.events == await stored(session)
    assert later.events[-1]["type"] == "agent_end"
    assert later.run_status == "succeeded"


async def test_a_second_message_while_a_run_is_active_is_refused(ada: User) -> None:
    agent = await sync_to_async(slow_agent)(ada)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "one"})
    await viewer.until(lambda v: bool(v.partials))
    await viewer.send({"type": "user_message", "text": "two"})
    await viewer.until(lambda v: bool(v.errors))
    assert viewer.errors[0]["code"] == "run_in_progress"
    await viewer.send({"type": "cancel"})
    await viewer.until_ended()
    assert viewer.run_status == "cancelled"


async def test_cancel_over_the_socket_ends_the_run_promptly_with_a_cancelled_event(
    ada: User,
) -> None:
    agent = await sync_to_async(slow_agent)(ada, words=2000)
    session = await new_session(ada, agent.name)
    viewer = await watch(application, session, ada)
    await viewer.send({"type": "user_message", "text": "go"})
    await viewer.until(lambda v: len(v.partials) >= 2)
    await viewer.send({"type": "cancel"})
    await viewer.until(lambda v: v.run_status == "cancelled", within=5)
    errors = viewer.events_of_type("error")
    assert [e["error"]["code"] for e in errors] == ["model_call_cut_off", "cancelled"]
    assert viewer.events == await stored(session)
    run = await latest_run(session)
    assert run is not None
    assert (run.status, run.owner_process, run.lease_expires_at) == ("cancelled", "", None)


async def test_lifespan_events_start_and_stop_the_run_manager() -> None:
    messages: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for kind in ("lifespan.startup", "lifespan.shutdown"):
        messages.put_nowait({"type": kind})
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await application({"type": "lifespan"}, messages.get, send)
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
