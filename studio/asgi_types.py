"""The ASGI callables' types as Studio's wrappers and endpoints spell them. ``Send``
takes any mutable mapping: the MCP and A2A SDKs' messages are not always dicts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
