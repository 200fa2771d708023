"""What a live timeline's websocket frames say to a client that watches a run: the
stored events it brings, and the status frame that ends the run (``studio.live``'s
protocol). Shared by ``make load``'s watchers and ``bench.server_cost``."""

from __future__ import annotations

import json
from typing import Any

ENDED = {"succeeded", "degraded", "failed", "cancelled", "interrupted"}


def stored_event(frame: dict[str, Any]) -> dict[str, Any] | None:
    """The stored event a frame brings (not a streamed partial one), if it brings one."""
    if frame["type"] == "event" and frame["event"].get("seq") is not None:
        event: dict[str, Any] = frame["event"]
        return event
    return None


def run_ended(frame: dict[str, Any], run_id: str) -> bool:
    """Whether ``frame`` says run ``run_id`` ended; ``RuntimeError`` if it ended other
    than succeeded."""
    run = frame.get("run") if frame["type"] == "status" else None
    if not run or run.get("id") != run_id or run.get("status") not in ENDED:
        return False
    if run["status"] != "succeeded":
        raise RuntimeError(f"run {run_id} ended {run['status']}")
    return True


def until_status(ws: Any) -> int:
    """Read a socket just opened up to its first status frame, which follows the stored
    events it catches up with; the frames read."""
    frames = 1
    while json.loads(ws.recv())["type"] != "status":
        frames += 1
    return frames
