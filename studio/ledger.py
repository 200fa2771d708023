"""The ledger of a run's open calls: what it asked for and has not got yet.

One reading of a run's stored events answers every question about what the run waits
on: the live status (``waiting_for``: a person's approval, a tool, or else the model),
recovery (which tool calls were left unanswered when its executor died, and whether
each may have taken effect) and approval decisions (does this call wait for one?).
The ledger follows events in their wire form, as stored and as published.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agents_core import events as core_events
from studio.models import Event, Run, RunStatus

WaitingFor = Literal["model", "tool", "approval"] | None

TRACKED_TYPES: frozenset[str] = frozenset(
    {
        core_events.EventType.AGENT_MESSAGE,
        core_events.EventType.TOOL_RESPONSE,
        core_events.EventType.APPROVAL_REQUEST,
        core_events.EventType.APPROVAL_DECISION,
    }
)
"""The event types that open or close a call."""


@dataclass(frozen=True, slots=True)
class OpenCall:
    """A tool call the model made that has no response yet, and where it was made."""

    call_id: str
    name: str
    invocation_id: str
    author: str
    branch: str | None


@dataclass(slots=True)
class Ledger:
    """A run's calls, built by ``observe``-ing its stored events in seq order."""

    open_calls: dict[str, OpenCall] = field(default_factory=dict)
    """Tool calls without a response, in the order they were made."""
    approvals: dict[str, str | None] = field(default_factory=dict)
    """Each call that asked for approval: its verdict, ``None`` while it waits."""

    def observe(self, wire: Mapping[str, Any]) -> None:
        kind = wire.get("type")
        if kind not in TRACKED_TYPES or wire.get("partial"):
            return
        if kind == core_events.EventType.AGENT_MESSAGE:
            for part in _parts(wire, "tool_call"):
                self.open_calls[part["call_id"]] = _open_call(wire, part)
        elif kind == core_events.EventType.TOOL_RESPONSE:
            for part in _parts(wire, "tool_response"):
                self.open_calls.pop(part["call_id"], None)
        else:
            approval = wire["approval"]
            self.approvals[approval["call_id"]] = approval.get("decision")

    def observe_all(self, wires: Iterable[Mapping[str, Any]]) -> Ledger:
        for wire in wires:
            self.observe(wire)
        return self

    def awaits_approval(self, call_id: str) -> bool:
        """Whether ``call_id`` asked for approval and has no decision yet."""
        return call_id in self.approvals and self.approvals[call_id] is None

    def waiting_for(self, run_status: str | None) -> WaitingFor:
        """What a run in ``run_status`` waits on: only a running run waits."""
        if run_status != RunStatus.RUNNING:
            return None
        if any(verdict is None for verdict in self.approvals.values()):
            return "approval"
        return "tool" if self.open_calls else "model"

    def never_ran(self, call: OpenCall) -> bool:
        """Whether an open call certainly did not run: it waited for an approval that
        never came, or was denied. Any other open call may have taken effect."""
        return call.call_id in self.approvals and self.approvals[call.call_id] != "approve"


def ledger_of(run: Run) -> Ledger:
    """The ledger of ``run``, read from its stored events (empty before it started)."""
    if run.start_seq is None:
        return Ledger()
    return Ledger().observe_all(_tracked_payloads(run.session_id, run.start_seq))


def _tracked_payloads(session_pk: uuid.UUID, after_seq: int) -> Iterable[dict[str, Any]]:
    rows = Event.objects.filter(session_id=session_pk, seq__gt=after_seq, type__in=TRACKED_TYPES)
    return rows.order_by("seq").values_list("payload", flat=True).iterator()


def _parts(wire: Mapping[str, Any], kind: str) -> Iterable[Mapping[str, Any]]:
    return (part for part in wire.get("parts", ()) if part.get("kind") == kind)


def _open_call(wire: Mapping[str, Any], part: Mapping[str, Any]) -> OpenCall:
    return OpenCall(
        call_id=part["call_id"],
        name=part["name"],
        invocation_id=wire["invocation_id"],
        author=wire["author"],
        branch=wire.get("branch"),
    )


def run_awaiting(session_pk: uuid.UUID, call_id: str) -> uuid.UUID | None:
    """The session's running run, if its call ``call_id`` waits for approval according
    to its stored events (requested, not yet decided)."""
    run = (
        Run.objects.filter(session_id=session_pk, status=RunStatus.RUNNING)
        .exclude(start_seq=None)
        .order_by("-created_at")
        .first()
    )
    if run is None or not ledger_of(run).awaits_approval(call_id):
        return None
    return run.pk
