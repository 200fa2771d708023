"""A script signs a websocket in with its API token, in the upgrade's Authorization
header (never the URL): it watches its own sessions, drives runs, is refused another
user's sessions, and deleting the token closes the socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import websockets
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from studio.asgi import application
from studio.models import Session
from tests.studio.conftest import make_session
from tests.support.daphne_server import DaphneServer, daphne_server
from tests.support.live import ENDED, HOST, ORIGIN, TIMEOUT_S, run_manager

__all__ = ["run_manager"]

pytestmark = pytest.mark.django_db(transaction=True)


async def open_with(headers: list[tuple[bytes, bytes]], session: Session, query: str = "") -> Any:
    path = f"/ws/sessions/{session.pk}/{query}"
    communicator = WebsocketCommunicator(application, path, headers=[(b"host", HOST), *headers])
    connected, code = await communicator.connect(timeout=TIMEOUT_S)
    return communicator, connected, code


async def first_frame_or_close(communicator: WebsocketCommunicator) -> dict[str, Any]:
    message = await communicator.receive_output(timeout=TIMEOUT_S)
    if message["type"] == "websocket.close":
        return {"closed": message.get("code")}
    return json.loads(message["text"])  # type: ignore[no-any-return]


def token_of(user: User) -> str:
    return Token.objects.get_or_create(user=user)[0].key


async def test_a_token_in_the_authorization_header_signs_the_socket_in(ada: User) -> None:
    session = await sync_to_async(make_session)(ada)
    key = await sync_to_async(token_of)(ada)
    communicator, connected, _ = await open_with(
        [(b"authorization", f"Token {key}".encode())], session
    )
    assert connected
    assert (await first_frame_or_close(communicator))["type"] == "status"
    await communicator.send_to(text_data=json.dumps({"type": "user_message", "text": "hi"}))
    frames = [await first_frame_or_close(communicator) for _ in range(3)]
    assert any(f.get("type") == "event" for f in frames)
    while not (frames[-1].get("type") == "status" and frames[-1]["run"]["status"] in ENDED):
        frames.append(await first_frame_or_close(communicator))  # the run's end, not cut
    await communicator.disconnect()


@pytest.mark.parametrize(
    "header",
    [b"Token not-a-real-token", b"Bearer whatever", b"Token ", b"Basic ZGVtbzpkZW1v"],
)
async def test_a_bad_or_foreign_credential_is_closed_as_unauthenticated(
    ada: User, header: bytes
) -> None:
    session = await sync_to_async(make_session)(ada)
    communicator, connected, _ = await open_with([(b"authorization", header)], session)
    assert connected  # closes come after the handshake, so clients can read them
    assert await first_frame_or_close(communicator) == {"closed": 4401}


async def test_a_token_in_the_url_is_not_accepted(ada: User) -> None:
    session = await sync_to_async(make_session)(ada)
    key = await sync_to_async(token_of)(ada)
    # From Studio's own origin, without a sign-in: the key in the query is ignored.
    communicator, connected, _ = await open_with([(b"origin", ORIGIN)], session, f"?token={key}")
    assert connected
    assert await first_frame_or_close(communicator) == {"closed": 4401}
    _, connected, _ = await open_with([], session, query=f"?token={key}")
    assert not connected  # and without an Origin the upgrade itself is refused


async def test_another_users_session_is_not_found_with_a_token(ada: User, bob: User) -> None:
    session = await sync_to_async(make_session)(ada)
    key = await sync_to_async(token_of)(bob)
    communicator, _, _ = await open_with([(b"authorization", f"Token {key}".encode())], session)
    assert await first_frame_or_close(communicator) == {"closed": 4404}


async def test_deleting_the_token_closes_its_sockets(ada: User) -> None:
    session = await sync_to_async(make_session)(ada)
    key = await sync_to_async(token_of)(ada)
    communicator, _, _ = await open_with([(b"authorization", f"Token {key}".encode())], session)
    assert (await first_frame_or_close(communicator))["type"] == "status"
    await sync_to_async(Token.objects.filter(key=key).delete)()
    assert await first_frame_or_close(communicator) == {"closed": 4401}


def test_over_daphne_a_script_watches_a_run_with_its_token(tmp_path: Any) -> None:
    with daphne_server(tmp_path / "data") as server:
        asyncio.run(_watch_over_daphne(server))


async def _watch_over_daphne(server: DaphneServer) -> None:
    server.manage("shell", "-c", CREATE)
    key, session_id = server.manage("shell", "-c", TOKEN).stdout.split()[-2:]
    url = f"{server.ws_url}/ws/sessions/{session_id}/"
    async with websockets.connect(url, additional_headers={"Authorization": f"Token {key}"}) as ws:
        assert json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT_S))["type"] == "status"
        await ws.send(json.dumps({"type": "user_message", "text": "what is 2 + 2"}))
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
            run = frame.get("run") or {}
            if frame["type"] == "status" and run.get("status") == "succeeded":
                break


CREATE = """
from django.contrib.auth.models import User
from studio import services
from studio.models import ModelConfig
user = User.objects.create_user("script", password="x")
ModelConfig.objects.create(owner=user, name="scripted", provider="scripted")
spec = {"name": "calc", "model": "scripted", "instruction": "Use the calculator.",
        "tools": [{"name": "calculator"}]}
agent = services.create_agent(user, name="calc", spec=spec)
services.start_session(user, agent)
"""

TOKEN = """
from rest_framework.authtoken.models import Token
from studio.models import Session
session = Session.objects.get(owner__username="script")
print(Token.objects.create(user=session.owner).key, session.pk)
"""
