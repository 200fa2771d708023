"""Runs Studio's whole middleware stack in one thread per request, as under WSGI.

Under ASGI, Django calls each middleware in the mode of the handler below it: an
async-capable one (every ``MiddlewareMixin``: sessions, CSRF, authentication...) above
an async handler runs async, and ``MiddlewareMixin`` then hands each of its
``process_request`` and ``process_response`` to a thread of its own
(``sync_to_async``) and back. Studio's stack is sync code throughout (WhiteNoise is
sync only, the ORM is sync), so that made some fifteen hops between the event loop
and the request's thread a request: about 1 ms of a server's CPU.

This sync-only middleware, last in ``MIDDLEWARE``, turns the stack above it sync: the
request enters the request's thread once, runs every middleware there, and leaves it
once for Django's async view handler, which runs a sync view back in that same
thread (asgiref's ``CurrentThreadExecutor``) and an async view on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase


class SyncStack:
    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)
