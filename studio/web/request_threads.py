"""Each HTTP request's sync code on a thread an earlier request used, as under WSGI.

Under ASGI, Django enters a ``ThreadSensitiveContext`` per request, and asgiref gives
each such context a new single-thread executor: a thread started for the request's
sync code (Studio's middleware stack, ``studio.web.sync_stack``, and its views), and a
second one that joins it when the request ends. So every request paid two thread
starts, and its thread's database connection died with it: on SQLite every request
opened and set up a new connection, whatever ``CONN_MAX_AGE`` said.

``with_request_threads`` enters the request's context itself, with an executor it
keeps (asgiref's ``ThreadSensitiveContext(executor=...)``; Django's own context inside
is then a no-op). A request still runs all its sync code on one thread of its own, as
before, and requests in flight at once never share one; when it ends, its thread
waits for the next request, with its connections, which ``CONN_MAX_AGE`` and Django's
``close_old_connections`` govern as they do for WSGI's threads: checked, and closed
when too old or broken, as each request starts and ends. An idle thread's connection
waits with it, so a process keeps at most ``KEPT`` such (PostgreSQL without
``STUDIO_DB_POOL_MAX``; a pool takes each connection back as its request ends).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext

from studio.asgi_types import ASGIApp, Receive, Scope, Send

KEPT = 16
"""Idle request threads kept for the next requests; a burst beyond this many requests
in flight at once starts threads that end after it."""


class RequestThreads:
    """Single-thread executors for requests, kept between them. Used from the event
    loop's thread only, so it needs no lock."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self.idle: list[ThreadPoolExecutor] = []

    def borrow(self) -> ThreadPoolExecutor:
        if self.idle:
            return self.idle.pop()
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix="request")

    def give_back(self, executor: ThreadPoolExecutor) -> None:
        """Keep ``executor`` for a later request. Work a cancelled request left running
        on it finishes first: the executor runs one call at a time."""
        if len(self.idle) < self.kept:
            self.idle.append(executor)
        else:
            executor.shutdown(wait=False)


def with_request_threads(app: ASGIApp, threads: RequestThreads | None = None) -> ASGIApp:
    """``app``, each of whose HTTP requests runs its thread-sensitive sync code on a
    thread of ``threads`` (a new ``RequestThreads`` by default)."""
    kept = threads or RequestThreads()

    async def application(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        executor = kept.borrow()
        try:
            async with ThreadSensitiveContext(executor=executor):
                await app(scope, receive, send)
        finally:
            kept.give_back(executor)

    return application
