"""Calling the ORM from async code."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, cast

from channels.db import database_sync_to_async


def db_sync_to_async[**P, R](func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """``database_sync_to_async`` with its types kept: runs ``func`` on the thread that
    owns Django's connections, closing stale connections before and after.

    Django's async ORM has no transactions, so anything that needs one is a sync
    function under ``transaction.atomic`` called through this.
    """
    return cast("Callable[P, Coroutine[Any, Any, R]]", database_sync_to_async(func))
