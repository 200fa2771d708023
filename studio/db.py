"""Calling the ORM from async code."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, cast

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async


def db_sync_to_async[**P, R](
    func: Callable[P, R], *, check_connections: bool = True
) -> Callable[P, Coroutine[Any, Any, R]]:
    """``database_sync_to_async`` with its types kept: runs ``func`` on the thread that
    owns Django's connections, closing stale connections before and after.

    Django's async ORM has no transactions, so anything that needs one is a sync
    function under ``transaction.atomic`` called through this.

    ``check_connections=False`` skips those checks (``close_old_connections``: with
    ``CONN_HEALTH_CHECKS`` a ``SELECT 1`` round trip per call) for a hot path that
    handles a dead connection itself, by closing it and trying again
    (``session_service.append_event``). Same thread, so the same connections.
    """
    wrapped = database_sync_to_async(func) if check_connections else sync_to_async(func)
    return cast("Callable[P, Coroutine[Any, Any, R]]", wrapped)
