"""Forks in the API (``services.forks``).

- ``POST /api/sessions/<id>/forks/``: fork the session at event ``seq``, optionally
  editing that event (``edit``: the user's message text, a tool's result, the model's
  reply text; ``call_id`` names the call of a response answering several), with
  another version of the same agent (``agent_version``, its number), and go on live at
  once (``go_on``: from the fork point, or with ``message``). Answers the new session
  and the run it started, if any.
- ``GET /api/sessions/<id>/forks/``: the fork tree the session belongs to, rooted at its
  oldest ancestor still stored, in reading order with each session's depth.
- ``POST /api/sessions/<id>/continue/``: go on live in a fork (``message`` optional).

Another user's session answers 404; a refused fork point 400 or 409 with its ``code``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio.api import serializers as s
from studio.api import session_serializers as ss
from studio.api.artifacts import owned_session
from studio.api.schema import error_responses
from studio.errors import InvalidInputError, Problem
from studio.models import AgentVersion, Session
from studio.services import forks

MAX_EDIT_CHARS = 1_000_000
MAX_MESSAGE_CHARS = 100_000


class ForkSerializer(serializers.Serializer[object]):
    seq = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="The fork point.")
    edit = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        max_length=MAX_EDIT_CHARS,
        help_text="What the fork point says instead; null or left out: as it was.",
    )
    call_id = serializers.CharField(
        required=False, allow_null=True, max_length=200, help_text="The tool call of an edit."
    )
    agent_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**31 - 1,
        help_text="A version number of the same agent; left out: the parent's version.",
    )
    title = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")
    go_on = serializers.BooleanField(
        required=False, default=False, help_text="Go on live at once (`message` or none)."
    )
    message = serializers.CharField(
        required=False, allow_blank=True, max_length=MAX_MESSAGE_CHARS, default=""
    )


class ContinueSerializer(serializers.Serializer[object]):
    message = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_MESSAGE_CHARS,
        default="",
        help_text="A new user message; empty: go on from the fork point.",
    )


class ForkedSerializer(serializers.Serializer[object]):
    session = ss.SessionSerializer()
    run = s.RunSerializer(allow_null=True)


class TreeSessionSerializer(serializers.Serializer[object]):
    id = serializers.UUIDField()
    title = serializers.CharField()
    status = serializers.CharField()
    # A field (the serializer's metaclass takes it off the class), not Serializer.parent.
    parent = serializers.UUIDField(source="parent_id", allow_null=True)  # type: ignore[assignment]
    fork_seq = serializers.IntegerField(allow_null=True)
    fork_event_id = serializers.CharField()
    created_at = serializers.DateTimeField()
    depth = serializers.IntegerField()


class ForkTreeSerializer(serializers.Serializer[object]):
    current = serializers.UUIDField()
    sessions = TreeSessionSerializer(many=True)


class ForkListView(APIView):
    """A session's fork tree, and forking it."""

    @extend_schema(responses={200: ForkTreeSerializer, **error_responses(404)})
    def get(self, request: Request, id: UUID) -> Response:
        session = owned_session(request, id)
        rows = [_tree_row(row, depth) for row, depth in forks.tree_rows(forks.fork_tree(session))]
        return Response(ForkTreeSerializer({"current": session.pk, "sessions": rows}).data)

    @extend_schema(
        request=ForkSerializer,
        responses={201: ForkedSerializer, **error_responses(400, 404, 409, 429)},
    )
    def post(self, request: Request, id: UUID) -> Response:
        session = owned_session(request, id)
        body = ForkSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        edit = None if data.get("edit") is None else forks.Edit(data["edit"], data.get("call_id"))
        with transaction.atomic():  # a fork that cannot go on as asked is not kept
            fork = forks.fork_session(
                session,
                data["seq"],
                edit=edit,
                agent_version=_version(session, data.get("agent_version")),
                title=data["title"],
            )
            run = forks.continue_fork(fork, data["message"]) if data["go_on"] else None
        fork.refresh_from_db()
        answer = ForkedSerializer({"session": fork, "run": run}).data
        return Response(answer, status=status.HTTP_201_CREATED)


class ContinueView(APIView):
    """Go on live in a fork: a new run, from the fork point or with a new message."""

    @extend_schema(
        request=ContinueSerializer,
        responses={202: s.RunSerializer, **error_responses(400, 404, 409, 429)},
    )
    def post(self, request: Request, id: UUID) -> Response:
        session = owned_session(request, id)
        body = ContinueSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        run = forks.continue_fork(session, body.validated_data["message"])
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


def _version(session: Session, number: int | None) -> AgentVersion | None:
    if number is None:
        return None
    current = session.agent_version
    found = (
        None
        if current is None
        else AgentVersion.objects.filter(agent_id=current.agent_id, number=number).first()
    )
    if found is None:
        message = f"the session's agent has no version {number}"
        raise InvalidInputError("agent_version", [Problem((), "does_not_exist", message)])
    return found


def _tree_row(session: Session, depth: int) -> dict[str, Any]:
    return {
        "id": session.pk,
        "title": session.title,
        "status": session.status,
        "parent_id": session.parent_id,
        "fork_seq": session.fork_seq,
        "fork_event_id": session.fork_event_id,
        "created_at": session.created_at,
        "depth": depth,
    }
