"""A server whose one answer streams a first chunk, then waits until the test lets it
go on: for checking what happens to a stream in flight."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2


@contextmanager
def held_stream() -> Iterator[tuple[str, threading.Event]]:
    """The server's URL, and the event that lets its answer go on."""
    go_on = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5\r\nfirst\r\n")
            self.wfile.flush()
            go_on.wait(10)
            self.wfile.write(b"4\r\nlast\r\n0\r\n\r\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", go_on
    finally:
        go_on.set()
        server.shutdown()
        server.server_close()


def stream_while_other_clients_close(transport: object) -> bytes:
    """What one client streams through ``transport`` while two other clients on it, an
    async and a blocking one, are closed mid-stream."""

    async def stream(url: str, go_on: threading.Event) -> bytes:
        reading = httpx2.AsyncClient(transport=transport)  # type: ignore[arg-type]
        async with reading.stream("GET", url) as response:
            pieces = response.aiter_raw()
            first = await anext(pieces)
            await httpx2.AsyncClient(transport=transport).aclose()  # type: ignore[arg-type]
            httpx2.Client(transport=transport).close()  # type: ignore[arg-type]
            go_on.set()
            return first + b"".join([piece async for piece in pieces])

    with held_stream() as (url, go_on):
        return asyncio.run(stream(url, go_on))
