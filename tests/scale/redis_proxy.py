"""A TCP proxy in front of Redis for the scale tests: a Redis outage (a stall or a cut)
that only the proxy's clients see, not the other clients of the shared Redis, and a
count of the connections they opened."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from urllib.parse import urlsplit, urlunsplit


class RedisProxy:
    """A TCP proxy to Redis that can stall or cut every connection through it, and
    counts the connections it ``accepted``: what its clients alone did, which Redis's
    own counters cannot tell apart from other clients' (another xdist worker's)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.flowing = threading.Event()
        self.flowing.set()
        self.refusing = False
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # closed
            if self.refusing:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets |= {client, upstream}
                self.accepted += 1
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self.flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._drop(source, sink)

    def _drop(self, *sockets: socket.socket) -> None:
        for sock in sockets:
            with self.lock:
                self.sockets.discard(sock)
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def stall(self, seconds: float) -> None:
        """Hold every byte in both directions for ``seconds``, then let it through."""
        self.flowing.clear()
        time.sleep(seconds)
        self.flowing.set()

    def cut(self, seconds: float) -> None:
        """Drop every connection, and refuse new ones for ``seconds``."""
        self.refusing = True
        with self.lock:
            open_now = list(self.sockets)
        self._drop(*open_now)
        time.sleep(seconds)
        self.refusing = False

    def close(self) -> None:
        self.listener.close()
        with self.lock:
            open_now = list(self.sockets)
        self._drop(*open_now)


def through(proxy: RedisProxy, url: str) -> str:
    """``url`` (a Redis URL) with the proxy's address instead of the server's."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"127.0.0.1:{proxy.port}", parts.path, "", ""))


def proxy_to(url: str) -> RedisProxy:
    """A new proxy to the Redis server of ``url``."""
    parts = urlsplit(url)
    return RedisProxy(parts.hostname or "127.0.0.1", parts.port or 6379)
