"""What the session page shows of replays: the run a replay session replays (a link to
its session) and the versions a run of this session may be replayed with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple
from uuid import UUID

from studio.models import Run, Session


class Version(NamedTuple):
    """What the session page shows of one of its agent's versions."""

    pk: UUID
    number: int
    note: str


REPLAY_VERSIONS = 20
"""Versions the replay controls offer, newest first."""


def replay_context(session: Session, versions: Sequence[Version]) -> dict[str, Any]:
    """``replayed`` (the session of the run this session's first replay replays, the
    same owner's) and ``replay_versions`` (the newest of ``versions``, the session's
    agent's versions newest first, as the page read them once for all its controls).

    Only the columns the page shows are read: the replayed session's title, not its
    run's and their sessions' every column (setting up such a query's select and
    ordering cost the page more than running it)."""
    original = (
        Run.objects.filter(session=session, replay_of__session__owner_id=session.owner_id)
        .order_by("created_at")
        .values_list("replay_of__session_id", flat=True)
        .first()
    )
    replayed = (
        None
        if original is None
        else Session.objects.filter(pk=original).only("pk", "title").first()
    )
    return {"replayed": replayed, "replay_versions": list(versions[:REPLAY_VERSIONS])}
