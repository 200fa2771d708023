"""HTTP connections that go only where ``studio.security`` allows.

Checking a URL resolves its host; an HTTP client that then resolves it again may get
another answer (DNS rebinding: public for the check, loopback for the connection).
These transports resolve each host once per connection, check every address and
connect only to those; TLS still verifies the certificate against the host name.

- ``checked_transport()``: for the MCP SDK's client.
- ``model_clients()``: for langchain-openai's (the openai SDK's) clients, which also
  follow no redirect.
- ``model_transport()``: for the Anthropic and Gemini clients (``httpx2`` too).
- ``httpx_transports()``: for the Ollama client, built on ``httpx`` (the original,
  over ``httpcore``), whose pools take the same backends.

Both libraries use ``httpx2``, which takes no network backend, so each transport's
connection pool is replaced by one built with ours. Proxies from the environment are
not used: the address checked must be the one connected to.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import httpcore
import httpcore2
import httpx2

if TYPE_CHECKING:
    import httpx

from agents_core.llm.http import DualTransport, PerLoopTransport
from studio import security


def checked_transport(ssl_context: ssl.SSLContext | None = None) -> httpx2.AsyncBaseTransport:
    """An async HTTP transport that connects only to addresses the outbound check admits.
    ``ssl_context`` (one from ``httpx2.create_ssl_context(trust_env=False)``) saves
    loading the CA bundle again."""
    ssl_context = ssl_context or httpx2.create_ssl_context(trust_env=False)
    transport = httpx2.AsyncHTTPTransport(verify=ssl_context, trust_env=False)
    # httpx takes no network backend, so its pool is replaced by one with ours.
    transport._pool = httpcore2.AsyncConnectionPool(
        ssl_context=ssl_context,
        network_backend=_CheckedBackend(),
    )
    return transport


class _CheckedBackend(httpcore2.AsyncNetworkBackend):
    """Resolves each host name once, checks every address it gets (``studio.security``)
    and connects to one of those: a name that resolves elsewhere by the time of the
    connection (DNS rebinding) cannot slip past the check made when the URL was used.
    TLS still verifies the certificate against the host name."""

    def __init__(self, inner: Any = None) -> None:
        self._inner = inner or httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = await asyncio.to_thread(admitted_addresses, host, port)
        failure: Exception | None = None
        for address in addresses:  # as a resolver's caller would: each in turn
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except _CONNECT_ERRORS as exc:
                failure = exc
        raise failure or httpcore2.ConnectError(f"no address for {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("reached over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


_CONNECT_ERRORS = (httpcore2.ConnectError, httpcore.ConnectError)
"""What the inner backend raises, for ``httpx2`` pools and ``httpx`` ones."""


class RefusedConnectError(httpcore2.ConnectError, httpcore.ConnectError):
    """No connection was tried: ``host`` did not resolve (``reason`` "unresolvable") or
    the outbound check refused its address (the check's code). ``detail`` says which.

    A connect error of both ``httpcore`` libraries, since both kinds of pool use these
    backends: each library's client maps it to its own ``ConnectError`` (``httpx2``'s
    or ``httpx``'s), which callers handle, instead of letting it through raw."""

    def __init__(self, host: str, reason: str, detail: str) -> None:
        super().__init__(f"refused to connect to {host}: {detail}")
        self.reason = reason
        self.detail = detail


def admitted_addresses(host: str, port: int) -> list[str]:
    """The addresses of ``host`` from one resolution, once ``check_outbound_url`` admits
    them all; ``RefusedConnectError`` if it does not."""
    literal = security.parse_ip_literal(host)
    try:
        found = [str(literal)] if literal is not None else security.system_resolver(host, port)
        netloc = f"[{host}]" if ":" in host else host
        security.check_outbound_url(f"http://{netloc}:{port}/", resolver=lambda _h, _p: found)
    except security.OutboundURLError as exc:
        raise RefusedConnectError(host, exc.code, exc.detail) from None
    except (OSError, UnicodeError) as exc:
        raise RefusedConnectError(
            host, "unresolvable", f"cannot resolve host {host!r} ({exc})"
        ) from None
    return list(dict.fromkeys(found))


# Model endpoints: the openai SDK's clients, under langchain-openai


@functools.lru_cache(maxsize=64)
def model_clients(base_url: str | None) -> dict[str, Any]:
    """``ChatOpenAI`` options: a sync and an async client that follow no redirect and
    connect only to admitted addresses; one pair per endpoint, as langchain-openai
    caches its own (building one loads the CA bundle). The async one has a pool per
    event loop: a server's and a worker's runs share their process's one loop, and
    with it its connections; code that calls a model from a loop of its own (an
    ``asyncio.run``) gets a pool for that loop, dropped once it closed."""
    from openai import DefaultAsyncHttpxClient, DefaultHttpxClient

    ssl_context = _ssl_context()
    return {
        "http_client": DefaultHttpxClient(
            transport=_checked_sync_transport(ssl_context),
            follow_redirects=False,
            trust_env=False,
        ),
        "http_async_client": DefaultAsyncHttpxClient(
            transport=PerLoopTransport(functools.partial(checked_transport, ssl_context)),
            follow_redirects=False,
            trust_env=False,
        ),
    }


class _CheckedSyncBackend(httpcore2.NetworkBackend):
    """``_CheckedBackend`` for blocking clients."""

    def __init__(self, inner: Any = None) -> None:
        self._inner = inner or httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        failure: Exception | None = None
        for address in admitted_addresses(host, port):
            try:
                return self._inner.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except _CONNECT_ERRORS as exc:
                failure = exc
        raise failure or httpcore2.ConnectError(f"no address for {host}")

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        raise httpcore2.ConnectError("reached over TCP only")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    return httpx2.create_ssl_context(trust_env=False)


def _checked_sync_transport(ssl_context: ssl.SSLContext) -> httpx2.HTTPTransport:
    transport = httpx2.HTTPTransport(verify=ssl_context, trust_env=False)
    transport._pool = httpcore2.ConnectionPool(
        ssl_context=ssl_context, network_backend=_CheckedSyncBackend()
    )
    return transport


@functools.cache
def model_transport() -> DualTransport:
    """One transport for the Anthropic and Gemini clients (blocking and async), which
    connects only to admitted addresses; the async side has a pool per event loop.
    Shared by every run's model, so a client's close leaves it open."""
    ssl_context = _ssl_context()
    return DualTransport(
        _checked_sync_transport(ssl_context),
        PerLoopTransport(functools.partial(checked_transport, ssl_context)),
        shared=True,
    )


def httpx_transports() -> tuple[httpx.HTTPTransport, httpx.AsyncHTTPTransport]:
    """A blocking and an async ``httpx`` transport that connect only to admitted
    addresses, for the Ollama client. New ones each time: the async pool belongs to
    the event loop of its first connection, and a model is built per run.

    ``httpx`` is imported here: with its command-line tool's ``rich``, it took ~0.1 s of
    every Studio process's start-up, and only these clients use it."""
    import httpx

    ssl_context = _ssl_context()
    sync = httpx.HTTPTransport(verify=ssl_context, trust_env=False)
    sync._pool = httpcore.ConnectionPool(
        ssl_context=ssl_context,
        network_backend=cast(Any, _CheckedSyncBackend(httpcore.SyncBackend())),
    )
    async_ = httpx.AsyncHTTPTransport(verify=ssl_context, trust_env=False)
    async_._pool = httpcore.AsyncConnectionPool(
        ssl_context=ssl_context,
        network_backend=cast(Any, _CheckedBackend(httpcore.AnyIOBackend())),
    )
    return sync, async_
