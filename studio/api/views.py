"""The REST API. Thin: querysets scoped to the user, serializers for shapes, services
for everything that changes more than one row."""

from __future__ import annotations

from typing import Any, cast

import django_filters  # type: ignore[import-untyped]  # no stubs published
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError
from rest_framework import filters, mixins, status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination, PageNumberPagination
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer, ValidationError
from rest_framework.utils.urls import replace_query_param

from agents_core import events as core_events
from studio import live, services
from studio.api import serializers as s
from studio.api import session_serializers as ss
from studio.api.bundles import SessionBundles
from studio.api.permissions import IsOwner, OwnedQuerysetMixin, request_owner
from studio.api.replays import RunReplays
from studio.api.schema import error_responses
from studio.api.traces import RunSpans, SessionSpans
from studio.auth import SignInThrottle
from studio.models import (
    Agent,
    AgentVersion,
    Event,
    ModelConfig,
    Run,
    RunStatus,
    Session,
    SessionStatus,
)


class TokenView(ObtainAuthToken):
    """Trade a username and password for an API token (``Authorization: Token <key>``)."""

    throttle_classes = [SignInThrottle]  # the sign-in page's count, for every server
    serializer_class = s.TokenCredentialsSerializer

    @extend_schema(
        auth=[],
        request=s.TokenCredentialsSerializer,
        responses={200: s.TokenSerializer, **error_responses(429)},
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().post(request, *args, **kwargs)


# Model configs


@extend_schema_view(
    list=extend_schema(summary="Your model configs (API keys are never returned)"),
    destroy=extend_schema(responses={204: None, **error_responses(409)}),
)
class ModelConfigViewSet(OwnedQuerysetMixin, viewsets.ModelViewSet[ModelConfig]):
    """Your model endpoints: provider, base URL, model name and options. API keys are
    write-only: set or replace one, never read it back."""

    queryset = ModelConfig.objects.all()
    serializer_class = s.ModelConfigSerializer
    permission_classes = [*viewsets.ModelViewSet.permission_classes, IsOwner]

    def perform_destroy(self, instance: ModelConfig) -> None:
        services.delete_model_config(instance)

    @extend_schema(request=None, responses=s.ConnectionCheckSerializer)
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Send one tiny request to the endpoint and report whether it answered."""
        check = async_to_sync(services.check_model_connection)(self.get_object())
        return Response(s.ConnectionCheckSerializer(check).data)


# Agents


@extend_schema_view(destroy=extend_schema(responses={204: None, **error_responses(409)}))
class AgentViewSet(OwnedQuerysetMixin, viewsets.ModelViewSet[Agent]):
    """Your agents: each saved spec that differs from the current one becomes a new,
    immutable version."""

    queryset = Agent.objects.select_related("current_version")
    serializer_class = s.AgentSerializer
    permission_classes = [*viewsets.ModelViewSet.permission_classes, IsOwner]

    def perform_destroy(self, instance: Agent) -> None:
        services.delete_agent(instance)

    @extend_schema(responses=s.AgentVersionSerializer(many=True))
    @action(detail=True, methods=["get"], pagination_class=PageNumberPagination)
    def versions(self, request: Request, pk: str | None = None) -> Response:
        """Every saved version of the agent, newest first."""
        paginator = PageNumberPagination()
        versions = self.get_object().versions.order_by("-number")
        page: list[AgentVersion] | None = paginator.paginate_queryset(versions, request, self)
        return paginator.get_paginated_response(s.AgentVersionSerializer(page, many=True).data)

    @extend_schema(responses=s.AgentVersionSerializer)
    @action(detail=True, methods=["get"], url_path=r"versions/(?P<number>[0-9]+)")
    def version(self, request: Request, pk: str | None = None, number: str = "") -> Response:
        version = get_object_or_404(self.get_object().versions, number=int(number))
        return Response(s.AgentVersionSerializer(version).data)

    @extend_schema(responses=s.AgentDocumentSerializer)
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str | None = None) -> Response:
        """The agent's current definition as a portable JSON document (no secrets)."""
        agent = self.get_object()
        response = Response(services.export_agent(agent))
        response["Content-Disposition"] = f'attachment; filename="{agent.name}.agent.json"'
        return response

    @extend_schema(request=s.AgentDocumentSerializer, responses={201: s.AgentSerializer})
    @action(detail=False, methods=["post"], url_path="import")
    def import_(self, request: Request) -> Response:
        """Create an agent from an exported document; its models and referenced agents
        must exist among yours, by name."""
        document = s.AgentDocumentSerializer(
            data=request.data, context=self.get_serializer_context()
        )
        document.is_valid(raise_exception=True)
        agent = services.import_agent(request_owner(request), document.validated_data)
        return Response(s.AgentSerializer(agent).data, status=status.HTTP_201_CREATED)


# Sessions and events


class SessionFilter(django_filters.FilterSet):  # type: ignore[misc]
    agent = django_filters.UUIDFilter(field_name="agent_version__agent_id")
    status = django_filters.ChoiceFilter(choices=SessionStatus.choices)
    created_from = django_filters.DateFilter(field_name="created_at", lookup_expr="date__gte")
    created_to = django_filters.DateFilter(field_name="created_at", lookup_expr="date__lte")

    class Meta:
        model = Session
        fields = ["agent", "status", "created_from", "created_to"]


class SessionPagination(CursorPagination):
    ordering = "-created_at"
    page_size = 50


class EventPage(BaseModel):
    """A page of a session's timeline, in seq order. ``next`` is set while more
    events may follow; pass ``last_seq`` as ``after`` to continue."""

    next: str | None
    last_seq: int
    results: list[core_events.Event]


class SeqPagination:
    """Cursor on ``seq``: ``?after=<seq>&limit=<n>`` returns the events after ``seq``."""

    default_limit = 100
    max_limit = 500

    def paginate_queryset(self, queryset: QuerySet[Event], request: Request) -> list[Event]:
        self.request = request
        self.after = _non_negative_int(request, "after", 0)
        self.limit = min(_non_negative_int(request, "limit", self.default_limit), self.max_limit)
        self.page = list(queryset.filter(seq__gt=self.after).order_by("seq")[: self.limit])
        return self.page

    def get_paginated_response(self, data: Any) -> Response:
        last_seq = self.page[-1].seq if self.page else self.after
        full = bool(self.page) and len(self.page) == self.limit
        url = self.request.build_absolute_uri()
        next_url = replace_query_param(url, "after", last_seq) if full else None
        return Response({"next": next_url, "last_seq": last_seq, "results": data})


def _non_negative_int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isdigit():
        raise ValidationError({name: ["must be a non-negative integer"]}, code="invalid")
    return int(raw)


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("search", str, description="Searches titles and message text.")
        ]
    ),
)
class SessionViewSet(
    SessionSpans,
    SessionBundles,
    OwnedQuerysetMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet[Session],
):
    """Your sessions: conversations with one agent version, their stored events, and the
    runs that add to them."""

    queryset = Session.objects.select_related("agent_version__agent", "ingested__agent")
    serializer_class = ss.SessionSerializer
    permission_classes = [*viewsets.GenericViewSet.permission_classes, IsOwner]
    pagination_class = SessionPagination
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend, filters.SearchFilter]
    filterset_class = SessionFilter
    search_fields = ["title", "events__text"]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_serializer_class(self) -> type[BaseSerializer[Any]]:
        if self.action == "create":
            return ss.SessionCreateSerializer
        return super().get_serializer_class()

    @extend_schema(
        request=ss.SessionCreateSerializer,
        responses={201: ss.SessionSerializer, **error_responses(409)},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Start a session pinned to the agent's current version."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        session = serializer.save()
        return Response(ss.SessionSerializer(session).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance: Session) -> None:
        services.delete_session(instance)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "after",
                {"type": "integer", "minimum": 0},
                description="Only events with a greater seq.",
            ),
            OpenApiParameter(
                "limit",
                {"type": "integer", "minimum": 0},
                description="At most this many (default 100, max 500).",
            ),
        ],
        responses=EventPage,
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def events(self, request: Request, pk: str | None = None) -> Response:
        """The session's stored events (the wire format of ``agents_core`` events)."""
        paginator = SeqPagination()
        page = paginator.paginate_queryset(self.get_object().events.all(), request)
        return paginator.get_paginated_response([event.payload for event in page])

    @extend_schema(
        request={
            "application/json": s.TextMessageSerializer,
            "multipart/form-data": s.MessageSerializer,
        },
        responses={202: s.RunSerializer, **error_responses(409, 429)},
    )
    @action(
        detail=True,
        methods=["post"],
        filter_backends=[],
        pagination_class=None,
        parser_classes=[JSONParser, MultiPartParser],
    )
    def messages(self, request: Request, pk: str | None = None) -> Response:
        """Send a message: queues a run of the pinned agent version and answers with it.
        Images and files ride along as ``files`` parts of a multipart body."""
        message = s.MessageSerializer(data=request.data)
        message.is_valid(raise_exception=True)
        data = message.validated_data
        run = services.start_run(self.get_object(), data["text"], data.get("files", []))
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=live.ApprovalBody, responses={204: None, **error_responses(400, 409)})
    @action(detail=True, methods=["post"], filter_backends=[], pagination_class=None)
    def approvals(self, request: Request, pk: str | None = None) -> Response:
        """Decide a tool call of this session's run that waits for approval: approve it
        (optionally with edited arguments) or deny it. 409 when no such call waits."""
        session = self.get_object()
        body = _parsed(live.ApprovalBody, request.data)
        services.decide(session, body, user=cast("User", request.user), via="api")
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=live.AnswerBody, responses={204: None, **error_responses(409)})
    @action(detail=True, methods=["post"], filter_backends=[], pagination_class=None)
    def answers(self, request: Request, pk: str | None = None) -> Response:
        """Answer a question this session's run asked the user (a ``user_question``
        event): the run goes on with the answer. 409 when no such question waits."""
        session = self.get_object()
        body = _parsed(live.AnswerBody, request.data)
        answered_by = request.user.get_username()
        async_to_sync(services.answer_question)(session, body, answered_by=answered_by)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def export(self, request: Request, pk: str | None = None) -> Response:
        """The session's events, runs and pinned agent version as one JSON document (for
        reading; ``.../bundle/`` is the versioned bundle another Studio imports)."""
        session = self.get_object()
        response = Response(services.export_session(session))
        response["Content-Disposition"] = f'attachment; filename="session-{session.id}.json"'
        return response


# Runs


class RunFilter(django_filters.FilterSet):  # type: ignore[misc]
    session = django_filters.UUIDFilter(field_name="session_id")
    status = django_filters.ChoiceFilter(choices=RunStatus.choices)

    class Meta:
        model = Run
        fields = ["session", "status"]


class RunViewSet(RunSpans, RunReplays, OwnedQuerysetMixin, viewsets.ReadOnlyModelViewSet[Run]):
    """The runs of your sessions, one per user turn: status, tokens, error."""

    queryset = Run.objects.all()
    serializer_class = s.RunSerializer
    permission_classes = [*viewsets.ReadOnlyModelViewSet.permission_classes, IsOwner]
    owner_path = "session__owner"
    filterset_class = RunFilter

    @extend_schema(request=None, responses={200: s.RunSerializer, **error_responses(409)})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a queued or running run; a finished one answers 409."""
        run = services.cancel_run(self.get_object())
        return Response(s.RunSerializer(run).data)

    @extend_schema(request=None, responses={200: s.RunSerializer, **error_responses(409)})
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str | None = None) -> Response:
        """Pause a running run once its current step is done (status ``paused``); a run
        that is not running answers 409 ``run_not_running``."""
        run = services.pause_run(self.get_object())
        return Response(s.RunSerializer(run).data)

    @extend_schema(request=None, responses={200: s.RunSerializer, **error_responses(409)})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str | None = None) -> Response:
        """Let a paused run go on; a run that is not paused answers 409 ``run_not_paused``."""
        run = services.resume_run(self.get_object())
        return Response(s.RunSerializer(run).data)

    @extend_schema(request=None, responses={202: s.RunSerializer, **error_responses(409, 429)})
    @action(detail=True, methods=["post"], url_path="resume-from-last-step")
    def resume_from_last_step(self, request: Request, pk: str | None = None) -> Response:
        """Queue a new run that goes on from this interrupted run's last completed step
        (its ``resumed_from``): recorded tool results are reused, nothing that answered
        runs again. 409 ``run_not_interrupted`` for a run that was not interrupted,
        ``run_superseded`` when a later run of its session exists, ``run_in_progress``
        while one is active."""
        run = services.resume_interrupted_run(self.get_object())
        return Response(s.RunSerializer(run).data, status=status.HTTP_202_ACCEPTED)


def _parsed[B: BaseModel](body: type[B], data: Any) -> B:
    """A request body checked against a socket frame's schema; problems become the
    API's validation error, by field."""
    try:
        return body.model_validate(data)
    except PydanticValidationError as exc:
        raise ValidationError(
            {".".join(str(p) for p in e["loc"]): [e["msg"]] for e in exc.errors()}
        ) from None
