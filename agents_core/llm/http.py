"""HTTP plumbing for model clients: connection pools that stay on their event loop."""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable

import httpx2


class PerLoopTransport(httpx2.AsyncBaseTransport):
    """An async transport that keeps one inner transport per running event loop.

    A pooled connection belongs to the event loop that opened it: used from another
    loop once that one has closed, it fails with ``RuntimeError: Event loop is closed``.
    A client kept for an endpoint may serve several loops in turn (an ``asyncio.run()``
    per call, a worker that runs each task in a loop of its own), so this transport
    gives each loop a pool of its own, built on the loop's first request and reused by
    all of that loop's requests. The pools of loops that have closed are dropped when
    the next request comes, so a long-lived process keeps only those of open loops.

    Args:
        factory: Builds the inner transport of a loop. Called once per loop.
    """

    def __init__(self, factory: Callable[[], httpx2.AsyncBaseTransport]) -> None:
        self._factory = factory
        self._transports: dict[asyncio.AbstractEventLoop, httpx2.AsyncBaseTransport] = {}
        self._lock = threading.Lock()  # loops may run in threads of their own

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._of_running_loop().handle_async_request(request)

    async def aclose(self) -> None:
        """Close the running loop's transport; another loop's can only close there."""
        with self._lock:
            transport = self._transports.pop(asyncio.get_running_loop(), None)
        if transport is not None:
            await transport.aclose()

    def _of_running_loop(self) -> httpx2.AsyncBaseTransport:
        loop = asyncio.get_running_loop()
        with self._lock:
            # A closed loop's connections cannot be closed any more: dropped, their
            # sockets close as they are garbage collected.
            for closed in [other for other in self._transports if other.is_closed()]:
                del self._transports[closed]
            if loop not in self._transports:
                self._transports[loop] = self._factory()
            return self._transports[loop]


class DualTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """One object that is both a blocking and an async transport, for a client library
    that hands the same ``transport`` option to its blocking and its async client.

    Args:
        shared: The process owns these transports and hands them to many clients, so
            a client's ``close()`` or ``aclose()`` leaves them open. Provider SDKs close
            their HTTP client when it is garbage collected (google-genai schedules
            ``aclose()`` on the running loop): on a shared pool that would end every
            other run's request on the loop, mid-stream.
    """

    def __init__(
        self,
        sync: httpx2.BaseTransport,
        async_: httpx2.AsyncBaseTransport,
        *,
        shared: bool = False,
    ) -> None:
        self._sync = sync
        self._async = async_
        self._shared = shared

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self._sync.handle_request(request)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._async.handle_async_request(request)

    def close(self) -> None:
        if not self._shared:
            self._sync.close()

    async def aclose(self) -> None:
        if not self._shared:
            await self._async.aclose()


@functools.lru_cache(maxsize=1)
def default_transports() -> DualTransport:
    """Plain transports for clients given none: no proxy from the environment, a pool
    per event loop (``PerLoopTransport``), one CA bundle loaded once; shared by every
    client, so no client closes them."""
    ssl_context = httpx2.create_ssl_context(trust_env=False)
    return DualTransport(
        httpx2.HTTPTransport(verify=ssl_context, trust_env=False),
        PerLoopTransport(lambda: httpx2.AsyncHTTPTransport(verify=ssl_context, trust_env=False)),
        shared=True,
    )
