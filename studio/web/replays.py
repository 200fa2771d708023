"""What the session page shows of replays: the run a replay session replays (a link to
its session) and the versions a run of this session may be replayed with."""

from __future__ import annotations

from typing import Any

from studio.models import AgentVersion, Run, Session


def replay_context(session: Session) -> dict[str, Any]:
    """``replayed`` (the replayed run's session, the same owner's) and ``replay_versions``
    (the session's agent's versions, newest first)."""
    replayed = (
        Run.objects.filter(session=session, replay_of__session__owner_id=session.owner_id)
        .select_related("replay_of__session")
        .order_by("created_at")
        .first()
    )
    version = session.agent_version
    versions = (
        AgentVersion.objects.filter(agent_id=version.agent_id).order_by("-number")[:20]
        if version is not None
        else AgentVersion.objects.none()
    )
    original = None if replayed is None or replayed.replay_of is None else replayed.replay_of
    return {
        "replayed": None if original is None else original.session,
        "replay_versions": list(versions),
    }
