"""HTTP connections that go only where ``studio.security`` allows.

Checking a URL resolves its host; an HTTP client that then resolves it again may get
another answer (DNS rebinding: public for the check, loopback for the connection).
``checked_transport()`` gives an httpx transport whose connections resolve each host
once, check every address and connect only to those. TLS still verifies the
certificate against the host name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2

from studio import security


def checked_transport() -> httpx2.AsyncBaseTransport:
    """An HTTP transport that connects only to addresses the outbound check admits."""
    transport = httpx2.AsyncHTTPTransport(trust_env=False)
    # httpx takes no network backend, so its pool is replaced by one with ours.
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=httpx2.create_ssl_context(trust_env=False),
        network_backend=_CheckedBackend(),
    )
    return transport


class _CheckedBackend(httpcore2.AsyncNetworkBackend):
    """Resolves each host name once, checks every address it gets (``studio.security``)
    and connects to one of those: a name that resolves elsewhere by the time of the
    connection (DNS rebinding) cannot slip past the check made when the URL was used.
    TLS still verifies the certificate against the host name."""

    def __init__(self) -> None:
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await asyncio.to_thread(admitted_addresses, host, port)
        failure: httpcore2.ConnectError | None = None
        for address in addresses:  # as a resolver's caller would: each in turn
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except httpcore2.ConnectError as exc:
                failure = exc
        raise failure or httpcore2.ConnectError(f"no address for {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("MCP servers are reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def admitted_addresses(host: str, port: int) -> list[str]:
    """The addresses of ``host`` from one resolution, once ``check_outbound_url`` admits
    them all; ``httpcore2.ConnectError`` if it does not."""
    literal = security.parse_ip_literal(host)
    try:
        found = [str(literal)] if literal is not None else security.system_resolver(host, port)
        netloc = f"[{host}]" if ":" in host else host
        security.check_outbound_url(f"http://{netloc}:{port}/", resolver=lambda _h, _p: found)
    except (OSError, UnicodeError, security.OutboundURLError) as exc:
        detail = exc.detail if isinstance(exc, security.OutboundURLError) else str(exc)
        raise httpcore2.ConnectError(f"refused to connect to {host}: {detail}") from None
    return list(dict.fromkeys(found))
