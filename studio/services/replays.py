"""Replaying a recorded run (``agents_core.replay``): a new session of the same owner,
started with copies of the turns before the run and of its user message, whose run
(linked to the original by ``Run.replay_of``) is queued like any other and so shows in
its timeline live. Executing it (``studio.runs.replays``) plays the record back until
the replay diverges from it."""

from __future__ import annotations

from django.db import transaction

from agents_core import replay as core_replay
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import AgentVersion, Event, Run, Session
from studio.services.sessions import _lock_for_a_new_run, _submit, refuse_ingested
from studio.session_service import append_event_sync

TITLE_MAX = 200


def recording_of(run: Run) -> core_replay.Recording:
    """The record of ``run``'s turn (``ConflictError`` ``run_not_replayable`` when it
    has none: it never started from a user message, or its events are gone)."""
    rows = Event.objects.filter(session_id=run.session_id).order_by("seq")
    events = [row.to_core() for row in rows]
    try:
        return core_replay.Recording.of(events, run.invocation_id or None)
    except core_replay.ReplayError as exc:
        raise ConflictError(str(exc), code="run_not_replayable") from exc


def replay_run(run: Run, *, version: AgentVersion | None = None) -> Run:
    """Queue a replay of finished ``run`` with ``version`` (by default the version that
    recorded it; otherwise one of the same agent: ``InvalidInputError``) in a new
    session, handed to the executor once committed. 409 ``run_in_progress`` while the run
    is active, ``run_not_replayable`` for a run resumed from another (it has no turn of
    its own to replay), ``run_ingested`` for a run of an agent that runs elsewhere (no
    version of it is here to replay with); the owner's run cap applies (``too_many_runs``)."""
    refuse_ingested(run.session_id)
    original = Session.objects.select_related("agent_version").get(pk=run.session_id)
    if run.is_active:
        raise ConflictError("a run can be replayed once it has ended", code="run_in_progress")
    if run.resumed_from_id is not None:
        raise ConflictError(
            "a run resumed from an interrupted one has no turn of its own to replay; "
            "replay the run it resumed",
            code="run_not_replayable",
        )
    recorded = original.agent_version
    if version is not None and (recorded is None or version.agent_id != recorded.agent_id):
        problem = Problem((), "invalid_agent_version", "not a version of the run's agent")
        raise InvalidInputError("agent_version", [problem])
    target = version or recorded
    if target is None:
        raise ConflictError("the run's agent version was deleted", code="session_has_no_agent")
    recording = recording_of(run)
    title = f"Replay of {original.title or 'a run'}"[:TITLE_MAX]
    with transaction.atomic():
        session = Session.objects.create(
            owner_id=original.owner_id, agent_version=target, title=title
        )
        locked = _lock_for_a_new_run(session)
        *before, said = core_replay.replay_copies(recording, locked.key)
        for event in before:
            append_event_sync(locked.key, event)
        stored = append_event_sync(locked.key, said)
        replay = Run.objects.create(
            session=locked,
            message=run.message,
            start_seq=(stored.seq or 1) - 1,
            invocation_id=stored.invocation_id,
            replay_of=run,
        )
        _submit(locked, replay)
    return replay
