"""Ending a sign-in (logout, password change, deactivation) closes that user's
websockets with 4401; other users' and other sign-ins' sockets stay open."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from studio import live
from studio.asgi import application
from tests.studio.conftest import make_session
from tests.support.live import HOST, ORIGIN, TIMEOUT_S, run_manager

__all__ = ["run_manager"]


async def connect(user: User, client: Client) -> WebsocketCommunicator:
    session = await sync_to_async(make_session)(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    communicator = WebsocketCommunicator(
        application,
        f"/ws/sessions/{session.pk}/",
        headers=[(b"host", HOST), (b"origin", ORIGIN), (b"cookie", cookie)],
    )
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    assert connected
    await communicator.receive_from(timeout=TIMEOUT_S)  # the first status frame
    return communicator


async def closed_with(communicator: WebsocketCommunicator) -> int | None:
    while True:
        message = await communicator.receive_output(timeout=TIMEOUT_S)
        if message["type"] == "websocket.close":
            return int(message.get("code", 1000))


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db(transaction=True)
async def test_logging_out_closes_that_sign_ins_sockets_only(ada: User) -> None:
    here, elsewhere = await sync_to_async(signed_in)(ada), await sync_to_async(signed_in)(ada)
    leaving = await connect(ada, here)
    staying = await connect(ada, elsewhere)
    await sync_to_async(here.post)("/accounts/logout/")
    assert await closed_with(leaving) == live.CLOSE_UNAUTHENTICATED
    assert await staying.receive_nothing(timeout=0.3)
    await staying.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_password_change_closes_every_socket_of_the_user(ada: User, bob: User) -> None:
    first = await connect(ada, await sync_to_async(signed_in)(ada))
    second = await connect(ada, await sync_to_async(signed_in)(ada))
    bobs = await connect(bob, await sync_to_async(signed_in)(bob))

    @sync_to_async
    def change_password() -> None:
        ada.set_password("a-brand-new-password-9")
        ada.save()

    await change_password()
    assert await closed_with(first) == live.CLOSE_UNAUTHENTICATED
    assert await closed_with(second) == live.CLOSE_UNAUTHENTICATED
    assert await bobs.receive_nothing(timeout=0.3)
    await bobs.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_deactivating_a_user_closes_their_sockets(ada: User) -> None:
    socket = await connect(ada, await sync_to_async(signed_in)(ada))
    ada.is_active = False
    await sync_to_async(ada.save)()
    assert await closed_with(socket) == live.CLOSE_UNAUTHENTICATED


@pytest.mark.django_db(transaction=True)
async def test_saving_a_user_without_auth_changes_leaves_their_sockets_open(ada: User) -> None:
    socket = await connect(ada, await sync_to_async(signed_in)(ada))
    ada.first_name = "Ada"
    await sync_to_async(ada.save)()
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()
