"""Studio's middleware runs in one thread per request (studio.web.sync_stack): served
over ASGI, a request enters its thread once for the whole stack, and no middleware's
``process_request`` or ``process_response`` is handed to a thread of its own."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import SyncToAsync, async_to_sync
from django.conf import settings
from django.contrib.auth.models import User
from django.test import AsyncClient

pytestmark = pytest.mark.django_db(transaction=True)

HOPS_AT_MOST = 5
"""Into the request's thread for the stack; then, from Django's async view handler,
the view middleware, the view, a template response's rendering and the response's
close: none of them per middleware (without ``SyncStack``: 14 for a page)."""


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the sync callables handed to a thread (``sync_to_async``) while a
    test runs: the real calls, counted."""
    seen: list[str] = []
    real = SyncToAsync.__call__

    async def counted(self: SyncToAsync[Any, Any], *args: Any, **kwargs: Any) -> Any:
        seen.append(getattr(self.func, "__qualname__", type(self.func).__qualname__))
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(SyncToAsync, "__call__", counted)
    return seen


def served(user: User, path: str, hops: list[str]) -> tuple[int, list[str]]:
    """``path``'s status for a signed-in ``user`` through Django's async request
    handler (as under Daphne), and the hops it made (the request signals' left out)."""

    async def get() -> int:
        client = AsyncClient()
        await client.aforce_login(user)
        hops.clear()
        return (await client.get(path)).status_code

    status = async_to_sync(get)()
    return status, [name for name in hops if "signal" not in name.lower()]


def test_the_stack_is_sync_from_the_last_middleware_up() -> None:
    assert settings.MIDDLEWARE[-1] == "studio.web.sync_stack.SyncStack"


@pytest.mark.parametrize("path", ["/sessions/", "/api/sessions/", "/agents/"])
def test_no_middleware_hook_takes_a_thread_hop_of_its_own(
    ada: User, hops: list[str], path: str
) -> None:
    status, made = served(ada, path, hops)

    assert status == 200
    hooks = [h for h in made if h.endswith((".process_request", ".process_response"))]
    assert hooks == []
    assert len(made) <= HOPS_AT_MOST, made
