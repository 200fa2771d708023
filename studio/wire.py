"""The one encoder: how events and runs look as JSON wherever Studio writes them.

An event's wire form is ``agents_core``'s (``Event.to_wire()``): the payload stored with
each event row, the REST API's events, websocket frames and exports are all that dict,
and ``event_text`` / ``payload_text`` are its JSON text. A run's wire form is
``run_payload``: the REST API's run resource, the run in websocket status frames, and
the runs of a session export.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from agents_core import events as core_events
from studio import costs
from studio.models import Run

COST_PLACES = costs.QUANTUM
"""``Run.cost``'s decimal places: costs are written with all of them, as strings."""


def event_payload(event: core_events.Event) -> dict[str, Any]:
    """The event's wire dict: what is stored as its payload and sent everywhere."""
    return event.to_wire()


def event_text(event: core_events.Event) -> str:
    """The event's wire dict as JSON text (the same JSON as ``payload_text``)."""
    return event.model_dump_json()


def payload_text(payload: Mapping[str, Any]) -> str:
    """A stored payload (an ``event_payload``) as JSON text."""
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def run_payload(run: Run) -> dict[str, Any]:
    """The run as the API, the live status and exports show it."""
    return {
        "id": str(run.pk),
        "session": str(run.session_id),
        "invocation_id": run.invocation_id,
        "message": run.message,
        "status": run.status,
        "created_at": _time(run.created_at),
        "started_at": _time(run.started_at),
        "ended_at": _time(run.ended_at),
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": None if run.cost is None else str(Decimal(run.cost).quantize(COST_PLACES)),
        "cost_currency": None if run.cost is None else run.cost_currency,
        "cost_complete": run.cost_complete,
        "error_code": run.error_code,
        "error_message": run.error_message,
        "timing": run.timing,
        "resumed_from": None if run.resumed_from_id is None else str(run.resumed_from_id),
        "copied_from": None if run.copied_from_id is None else str(run.copied_from_id),
        "replay_of": None if run.replay_of_id is None else str(run.replay_of_id),
    }


def _time(value: datetime | None) -> str | None:
    """ISO 8601, UTC written ``Z`` (as Django REST framework writes times)."""
    if value is None:
        return None
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
