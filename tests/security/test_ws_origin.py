"""Websocket upgrades are admitted only from Studio's own origin (scheme, host and port
of the request's Host) or a CSRF_TRUSTED_ORIGINS entry: another app on the same machine
(another port), another host, ``null`` and missing origins are refused (studio.asgi)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from studio.asgi import application, parse_origin
from tests.studio.conftest import make_session
from tests.support.daphne_server import daphne_server, prepare_data
from tests.support.live import TIMEOUT_S, run_manager, session_cookie
from tests.support.live_client import Api, prepare_live_data

__all__ = ["run_manager"]

HOST = b"127.0.0.1:8000"


async def upgrade(user: User, headers: list[tuple[bytes, bytes]], scheme: str = "ws") -> bool:
    """Whether a signed-in upgrade to one of ``user``'s sessions is accepted."""
    session = await sync_to_async(make_session)(user)
    cookie = (b"cookie", await session_cookie(user))
    communicator = WebsocketCommunicator(
        application, f"/ws/sessions/{session.pk}/", [*headers, cookie]
    )
    communicator.scope["scheme"] = scheme
    connected, _ = await communicator.connect(timeout=TIMEOUT_S)
    await communicator.disconnect()
    return connected


REFUSED: list[tuple[str, list[tuple[bytes, bytes]]]] = [
    ("another port on the same host", [(b"host", HOST), (b"origin", b"http://127.0.0.1:9999")]),
    ("the default port", [(b"host", HOST), (b"origin", b"http://127.0.0.1")]),
    ("another host", [(b"host", HOST), (b"origin", b"http://evil.example:8000")]),
    ("localhost is another origin", [(b"host", HOST), (b"origin", b"http://localhost:8000")]),
    ("https is another origin", [(b"host", HOST), (b"origin", b"https://127.0.0.1:8000")]),
    ("null", [(b"host", HOST), (b"origin", b"null")]),
    ("file", [(b"host", HOST), (b"origin", b"file://")]),
    ("missing origin", [(b"host", HOST)]),
    ("empty origin", [(b"host", HOST), (b"origin", b"")]),
    ("malformed port", [(b"host", HOST), (b"origin", b"http://127.0.0.1:80a")]),
    ("credentials in the origin", [(b"host", HOST), (b"origin", b"http://a@127.0.0.1:8000")]),
    (
        "two origins",
        [(b"host", HOST), (b"origin", b"http://127.0.0.1:8000"), (b"origin", b"http://e.example")],
    ),
    ("missing host", [(b"origin", b"http://127.0.0.1:8000")]),
    (
        "a host outside ALLOWED_HOSTS, even when it matches the origin",
        [(b"host", b"evil.example:8000"), (b"origin", b"http://evil.example:8000")],
    ),
    (
        "a suffix of an allowed host",
        [(b"host", b"evil-localhost:8000"), (b"origin", b"http://evil-localhost:8000")],
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("headers", [h for _, h in REFUSED], ids=[name for name, _ in REFUSED])
async def test_upgrades_from_other_origins_are_refused(
    ada: User, headers: list[tuple[bytes, bytes]]
) -> None:
    assert not await upgrade(ada, headers)


ACCEPTED: list[tuple[str, list[tuple[bytes, bytes]], str]] = [
    ("same origin", [(b"host", HOST), (b"origin", b"http://127.0.0.1:8000")], "ws"),
    ("case and default port", [(b"host", b"LOCALHOST"), (b"origin", b"http://localhost:80")], "ws"),
    ("over TLS", [(b"host", b"localhost:8443"), (b"origin", b"https://localhost:8443")], "wss"),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("headers", "scheme"), [(h, s) for _, h, s in ACCEPTED], ids=[n for n, _, _ in ACCEPTED]
)
async def test_upgrades_from_the_same_origin_are_accepted(
    ada: User, headers: list[tuple[bytes, bytes]], scheme: str
) -> None:
    assert await upgrade(ada, headers, scheme)


@pytest.mark.django_db(transaction=True)
async def test_a_trusted_origin_is_accepted_and_its_port_matters(ada: User, settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://studio.example", "https://*.tools.example"]
    assert await upgrade(ada, [(b"host", HOST), (b"origin", b"https://studio.example")])
    assert await upgrade(ada, [(b"host", HOST), (b"origin", b"https://a.tools.example")])
    assert not await upgrade(ada, [(b"host", HOST), (b"origin", b"https://studio.example:444")])
    assert not await upgrade(ada, [(b"host", HOST), (b"origin", b"http://studio.example")])
    assert not await upgrade(ada, [(b"host", HOST), (b"origin", b"https://eviltools.example")])


@pytest.mark.django_db(transaction=True)
async def test_behind_a_tls_proxy_the_forwarded_scheme_counts(ada: User, settings: Any) -> None:
    headers = [(b"host", b"localhost"), (b"origin", b"https://localhost")]
    assert not await upgrade(ada, headers)
    assert not await upgrade(ada, [*headers, (b"x-forwarded-proto", b"https")])
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert await upgrade(ada, [*headers, (b"x-forwarded-proto", b"https")])
    assert not await upgrade(ada, [*headers, (b"x-forwarded-proto", b"http")])


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("http://127.0.0.1:8000", ("http", "127.0.0.1", 8000)),
        ("HTTPS://Studio.Example", ("https", "studio.example", 443)),
        ("http://[::1]:8000", ("http", "::1", 8000)),
        ("null", None),
        ("ws://127.0.0.1:8000", None),
        ("http://127.0.0.1:99999", None),
        ("http://127.0.0.1:8000/path", None),
        ("http://", None),
    ],
)
def test_parse_origin(text: str, parsed: tuple[str, str, int] | None) -> None:
    assert parse_origin(text) == parsed


@pytest.mark.timeout(120)
def test_over_daphne_a_page_on_another_local_port_cannot_open_the_socket(
    tmp_path: Path,
) -> None:
    """The case that motivated the rule: another app on 127.0.0.1:<other port>."""
    data = prepare_data(tmp_path / "data", ("seed_demo",))
    with daphne_server(data) as server:
        agent = {"name": "echo", "model": "echo_model", "instruction": "Reply."}
        setup = prepare_live_data(server, "demo", [{"spec": agent, "options": {}}])
        api = Api(server.url, setup["token"])
        session = api.ok("POST", "/api/sessions/", {"agent": setup["agents"]["echo"]})
        url = f"{server.ws_url}/ws/sessions/{session['id']}/"
        cookie = {"Cookie": f"sessionid={setup['cookie']}"}

        async def handshake(origin: str | None) -> int:
            """The upgrade's HTTP status: 101 when the socket opened."""
            try:
                socket = await connect(url, origin=origin, additional_headers=cookie)  # type: ignore[arg-type]
            except InvalidStatus as refused:
                return refused.response.status_code
            await socket.recv()  # the first status frame
            await socket.close()
            return 101

        other_port = f"http://127.0.0.1:{server.port + 1 if server.port != 65535 else 1}"
        assert asyncio.run(handshake(other_port)) == 403
        assert asyncio.run(handshake(f"http://localhost:{server.port}")) == 403
        assert asyncio.run(handshake(None)) == 403
        assert asyncio.run(handshake(server.url)) == 101
