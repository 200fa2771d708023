"""Fuzzing the live websocket (``studio.consumers``, protocol in ``studio.live``) on the
real ASGI application: random JSON, protocol frames with wrong types or extra fields,
deep nesting, text that is not JSON, binary frames, oversize frames and floods.

Every bad frame gets an ``error`` frame (the socket stays open) or closes the socket
with the protocol's code (4009 too big, 4429 flood); nothing raises in the consumer,
no bad frame writes a run or an event, and another viewer of the same session keeps
receiving its events.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from studio import live
from studio.asgi import application
from studio.models import Event, Run, Session
from tests.studio.conftest import make_session
from tests.support.daphne_server import DaphneServer, daphne_server, prepare_data
from tests.support.live import (
    TIMEOUT_S,
    Viewer,
    open_socket,
    run_manager,
    run_to_end,
    watch,
)
from tests.support.live_client import ENDED, Api, prepare_live_data

__all__ = ["run_manager"]

pytestmark = pytest.mark.django_db(transaction=True)


def _not_str(value: Any) -> bool:
    return not isinstance(value, str)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _is_frame(text: str) -> bool:
    try:
        live.parse_client_frame(text)
    except live.BadFrame:
        return False
    return True


# Bounded so a hypothesis example stays small; the frame size limit is tested apart.
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
FRAME_TYPES = st.sampled_from(["user_message", "cancel", "approval", "USER_MESSAGE", "", "event"])
# Protocol-shaped frames with a wrong type somewhere or a field too many.
WRONG_TYPES = st.one_of(
    st.fixed_dictionaries({"type": FRAME_TYPES, "text": JSON_VALUES.filter(_not_str)}),
    st.fixed_dictionaries({"type": st.just("user_message"), "text": st.just("")}),
    st.fixed_dictionaries({"type": FRAME_TYPES, "text": st.text(max_size=40), "x": JSON_VALUES}),
    st.fixed_dictionaries({"type": JSON_VALUES.filter(_not_str)}),
    st.fixed_dictionaries(
        {
            "type": st.just("approval"),
            "call_id": JSON_VALUES,
            "args_hash": st.text(max_size=70),
            "decision": st.sampled_from(["approve", "deny", "maybe", 1, None]),
        },
        optional={"edited_args": JSON_VALUES, "reason": JSON_VALUES},
    ),
    st.fixed_dictionaries({"type": st.just("cancel"), "now": st.booleans()}),
)
NESTED = st.integers(1, 20_000).map(lambda depth: "[" * depth + "]" * depth)
NOT_JSON = st.text(max_size=200).filter(lambda text: not _is_json(text))


BAD_TEXT = st.one_of(
    JSON_VALUES.map(json.dumps),
    WRONG_TYPES.map(json.dumps),
    NESTED,
    NOT_JSON,
).filter(lambda text: not _is_frame(text))
BAD_FRAMES = st.one_of(
    BAD_TEXT.map(lambda text: {"text": text}),
    st.binary(max_size=200).map(lambda data: {"bytes": data}),
)


@sync_to_async
def writes(session: Session) -> tuple[int, int]:
    """What frames could have written: the session's runs and events."""
    return Run.objects.filter(session=session).count(), Event.objects.filter(
        session=session
    ).count()


async def closed_with(viewer: Viewer) -> int:
    """The close code; error frames before it go to ``viewer.errors``."""
    while True:
        message = await viewer.communicator.receive_output(timeout=TIMEOUT_S)
        if message["type"] == "websocket.close":
            return int(message.get("code", 1000))
        frame = json.loads(message["text"])
        if frame["type"] == "error":
            viewer.errors.append(frame)


@pytest.fixture
async def session(ada: User) -> Session:
    return await sync_to_async(make_session)(ada)


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(frames=st.lists(BAD_FRAMES, min_size=1, max_size=8))
async def test_every_bad_frame_gets_an_error_frame_and_writes_nothing(
    ada: User, session: Session, frames: list[dict[str, Any]]
) -> None:
    before = await writes(session)
    viewer = await watch(application, session, ada)
    for frame in frames:
        # send_input, not send_to: a frame may be empty.
        await viewer.communicator.send_input({"type": "websocket.receive", **frame})
        reply = await viewer.receive()
        assert reply["type"] == "error", (frame, reply)
        assert reply["code"] == "invalid"
        assert isinstance(reply["detail"], str)
    # Still open, still answering: a well-formed frame that the state refuses.
    await viewer.send({"type": "cancel"})
    assert await viewer.receive() == {
        "type": "error",
        "code": "no_active_run",
        "detail": "this session has no run in progress",
    }
    await viewer.close()
    assert await writes(session) == before


async def test_an_oversize_frame_closes_with_4009_and_other_viewers_carry_on(
    ada: User, session: Session, settings: Any
) -> None:
    settings.STUDIO_WS_MAX_MESSAGE_BYTES = 4096
    bystander = await watch(application, session, ada)
    attacker = await watch(application, session, ada)
    text = json.dumps({"type": "user_message", "text": "é" * 3000})  # 6 kB as UTF-8
    await attacker.communicator.send_to(text_data=text)
    assert await closed_with(attacker) == live.CLOSE_TOO_BIG
    assert await writes(session) == (0, 0)
    await run_to_end(bystander, "hello")
    assert bystander.run_status == "succeeded"
    assert bystander.events
    await bystander.close()


async def test_an_oversize_binary_frame_closes_with_4009(
    ada: User, session: Session, settings: Any
) -> None:
    settings.STUDIO_WS_MAX_MESSAGE_BYTES = 4096
    viewer = await watch(application, session, ada)
    await viewer.communicator.send_to(bytes_data=b"\x00" * 5000)
    assert await closed_with(viewer) == live.CLOSE_TOO_BIG


async def test_a_flood_closes_with_4429_and_other_viewers_carry_on(
    ada: User, session: Session, settings: Any
) -> None:
    settings.STUDIO_WS_BURST = 5
    settings.STUDIO_WS_RATE_PER_S = 0.1
    bystander = await watch(application, session, ada)
    attacker = await watch(application, session, ada)
    for _ in range(settings.STUDIO_WS_BURST + 1):
        await attacker.communicator.send_to(text_data='{"type": "user_message"}')
    assert await closed_with(attacker) == live.CLOSE_FLOOD
    assert attacker.errors and all(e["code"] == "invalid" for e in attacker.errors)
    assert await writes(session) == (0, 0)
    await run_to_end(bystander, "hello")
    assert bystander.run_status == "succeeded"
    await bystander.close()


@pytest.mark.parametrize(
    "text",
    [
        '{"type": "user_message", "text": "\\ud800"}',  # a lone surrogate, escaped
        '{"type": "user_message", "text": "a\\u0000b"}',
        '{"type": "approval", "call_id": "\\udfff", "args_hash": "' + "0" * 64 + '", '
        '"decision": "deny"}',
    ],
)
async def test_text_no_database_can_store_is_refused(
    ada: User, session: Session, text: str
) -> None:
    viewer = await watch(application, session, ada)
    await viewer.communicator.send_to(text_data=text)
    reply = await viewer.receive()
    assert reply["type"] == "error", reply
    await viewer.close()
    assert await writes(session) == (0, 0)


async def test_a_frame_for_a_session_deleted_meanwhile_closes_with_4404(
    ada: User, session: Session
) -> None:
    communicator, connected = await open_socket(application, session.pk, ada)
    assert connected
    await sync_to_async(session.delete)()
    await communicator.send_to(text_data=json.dumps({"type": "user_message", "text": "hi"}))
    viewer = Viewer(communicator)
    assert await closed_with(viewer) == live.CLOSE_NOT_FOUND
    await communicator.disconnect(timeout=TIMEOUT_S)  # raises what the consumer raised
    assert await sync_to_async(Run.objects.count)() == 0


# Over a real Daphne: what its websocket library refuses before Studio sees it.


@pytest.fixture(scope="module")
def daphne(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DaphneServer, Api, Any]]:
    data = prepare_data(tmp_path_factory.mktemp("ws_fuzz") / "data", ("seed_demo",))
    with daphne_server(data) as server:
        agent = {"name": "echo", "model": "echo_model", "instruction": "Reply."}
        setup = prepare_live_data(server, "demo", [{"spec": agent, "options": {}}])
        yield server, Api(server.url, setup["token"]), setup


async def _socket(server: DaphneServer, cookie: str, session_id: str) -> ClientConnection:
    return await connect(
        f"{server.ws_url}/ws/sessions/{session_id}/",
        origin=server.url,  # type: ignore[arg-type]
        additional_headers={"Cookie": f"sessionid={cookie}"},
        max_size=2**24,
    )


async def _close_code(socket: ClientConnection) -> int | None:
    try:
        while True:
            await asyncio.wait_for(socket.recv(), TIMEOUT_S)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd is not None else None


@pytest.mark.timeout(120)
def test_over_daphne_bad_frames_close_with_proper_codes_and_a_viewer_carries_on(
    daphne: tuple[DaphneServer, Api, Any],
) -> None:
    server, api, setup = daphne
    session = api.ok("POST", "/api/sessions/", {"agent": setup["agents"]["echo"]})

    async def scenario() -> list[dict[str, Any]]:
        bystander = await _socket(server, setup["cookie"], session["id"])
        # Daphne's websocket library (autobahn) fails a connection that breaks the
        # protocol by dropping it, without a close frame: no code (None) or 1007/1009.
        cases = [
            (
                "invalid UTF-8 in a text frame",
                b'{"type": "user_message", "text": "\xff"}',
                {1007, None},
            ),
            ("over Daphne's 1 MiB limit", b"[" * (2**20 + 1), {1009, None}),
            ("over Studio's 64 KiB limit", b'"' + b"a" * 70_000 + b'"', {live.CLOSE_TOO_BIG}),
        ]
        for name, payload, expected in cases:
            attacker = await _socket(server, setup["cookie"], session["id"])
            await attacker.recv()  # the first status frame
            await attacker.send(payload, text=True)
            code = await _close_code(attacker)
            assert code in expected, (name, code)
        await bystander.send(json.dumps({"type": "user_message", "text": "hello"}))
        frames: list[dict[str, Any]] = []
        while not any(
            f["type"] == "status" and (f["run"] or {}).get("status") in ENDED for f in frames
        ):
            frames.append(json.loads(await asyncio.wait_for(bystander.recv(), TIMEOUT_S)))
        await bystander.close()
        return frames

    frames = asyncio.run(scenario())
    assert [f for f in frames if f["type"] == "event" and not f["event"]["partial"]]
    assert frames[-1]["run"]["status"] == "succeeded"
    assert api.ok("GET", f"/api/runs/?session={session['id']}")["count"] == 1
    log = "".join(server.output)
    assert "Traceback" not in log, log[-3000:]
