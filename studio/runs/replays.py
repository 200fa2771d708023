"""Executing a replay run (``Run.replay_of``): its runner plays the replayed run's
record back (``agents_core.replay``), with the version that recorded it as the
reference when the replay runs another one."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents_core import replay as core_replay
from agents_core.runner import Runner
from agents_core.tools.base import BaseTool
from studio.agents import specs
from studio.models import AgentVersion, Event, Run, Session


def runner_type(
    run: Run, version: AgentVersion, mcp_tools: Mapping[str, Sequence[BaseTool]]
) -> Callable[..., Runner]:
    """What runs ``run``: a ``Runner``, or for a replay a ``ReplayRunner`` bound to its
    record (a ``ReplayError`` when the replayed run or its turn is gone)."""
    if run.replay_of_id is None:
        return Runner
    original = Run.objects.filter(pk=run.replay_of_id).first()
    if original is None:
        raise core_replay.ReplayError("the replayed run was deleted")
    rows = Event.objects.filter(session_id=original.session_id).order_by("seq")
    recording = core_replay.Recording.of(
        [row.to_core() for row in rows], original.invocation_id or None
    )
    recorded = Session.objects.filter(pk=original.session_id).values_list(
        "agent_version", flat=True
    )
    recorded_id = recorded.first()
    reference = None
    if recorded_id is not None and recorded_id != version.pk:
        reference = specs.build(AgentVersion.objects.get(pk=recorded_id), mcp_tools=mcp_tools)
    options: dict[str, Any] = {
        "replay": core_replay.Replay(recording),
        "reference": None if reference is None else reference.agent,
    }
    return functools.partial(core_replay.ReplayRunner, **options)
