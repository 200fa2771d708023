"""``replay`` for the run viewset: re-run a recorded run on its recorded outputs."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import ErrorDetail
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import ValidationError

from studio import services
from studio.api.schema import error_responses
from studio.api.serializers import RunSerializer
from studio.models import AgentVersion, Run


class ReplayRequestSerializer(serializers.Serializer[Any]):
    agent_version = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="The id of a version of the run's agent to replay against; by default "
        "the one that recorded the run. Recorded outputs are reused until its requests "
        "differ from the record's.",
    )


def _version(run: Run, version_id: uuid.UUID | None) -> AgentVersion | None:
    """The version ``version_id`` of ``run``'s agent (400 for any other, the owner's
    other agents' and other users' versions alike)."""
    if version_id is None:
        return None
    recorded = run.session.agent_version
    versions = AgentVersion.objects.none()
    if recorded is not None:
        versions = AgentVersion.objects.filter(agent_id=recorded.agent_id)
    found = versions.filter(pk=version_id).first()
    if found is None:
        problem = ErrorDetail("not a version of this run's agent", code="does_not_exist")
        raise ValidationError({"agent_version": [problem]})
    return found


class RunReplays:
    """``replay`` for the run viewset."""

    get_object: Any

    @extend_schema(
        request=ReplayRequestSerializer,
        responses={202: RunSerializer, **error_responses(400, 409, 429)},
    )
    @action(detail=True, methods=["post"])
    def replay(self, request: Request, pk: str | None = None) -> Response:
        """Replay this finished run in a new session: its recorded model replies, tool
        results and decisions are played back (no model called, no tool run) while the
        requests match the record; from the first that does not, it runs live, and an
        ``error`` event (code ``replay_diverged``) marks the point. Answers the queued
        replay run (its ``replay_of`` is this run); 409 ``run_in_progress`` while this run
        is active, ``run_not_replayable`` when it has no turn of its own."""
        run: Run = self.get_object()
        body = ReplayRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        version = _version(run, body.validated_data.get("agent_version"))
        replay = services.replay_run(run, version=version)
        return Response(RunSerializer(replay).data, status=status.HTTP_202_ACCEPTED)
