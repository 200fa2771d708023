"""Remote A2A agents in the API: ``/api/remote-agents/``.

Each user sees and uses only their own (404 for others'). The URL passes the outbound
check when saved and each time the card is read; the token is write-only (responses
say only ``has_token``). Creating or changing one reads its card at once; ``POST
.../refresh/`` reads it again. The card (name, description, skills) is text from
elsewhere: clients show it as text.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from studio.api import mcp_fields as f
from studio.api.fields import NameField
from studio.api.permissions import IsOwner, OwnedQuerysetMixin, request_owner
from studio.mcp import checks as mcp_checks
from studio.models import RemoteAgent
from studio.services import remote_agents as rules


class RemoteAgentSerializer(f.ClosedSchema, serializers.ModelSerializer[RemoteAgent]):
    name = NameField(
        help_text="Letters, digits, '_' or '-', starting with a letter or '_': the agent's "
        'tool is a2a_<name>, and specs list it ({"name": "a2a", "settings": {"servers": '
        "[name]}})."
    )
    description = f.description_field()
    url = serializers.RegexField(
        mcp_checks.URL_PATTERN,
        max_length=mcp_checks.MAX_URL_CHARS,
        help_text="The A2A base URL (its card is under /.well-known/agent-card.json). "
        "Loopback, private, link-local and metadata addresses are refused unless "
        "STUDIO_OUTBOUND_ALLOWLIST admits them.",
    )
    token = serializers.RegexField(
        rules.TOKEN_PATTERN,
        write_only=True,
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        max_length=rules.MAX_TOKEN_CHARS,
        help_text="Write-only: sent as Authorization: Bearer <token>. Empty removes it.",
    )
    has_token = serializers.BooleanField(read_only=True)
    card = serializers.JSONField(
        read_only=True,
        help_text="What its card said when last read: name, description, version, "
        "streaming, skills [{name, description, tags}]. Text, never markup.",
    )

    class Meta:
        model = RemoteAgent
        fields = [
            "id",
            "name",
            "description",
            "url",
            "token",
            "has_token",
            "card",
            "card_error",
            "card_fetched_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "card_error", "card_fetched_at", "created_at", "updated_at"]

    def validate_name(self, name: str) -> str:
        current = self.instance if isinstance(self.instance, RemoteAgent) else None
        why = rules.name_problem(request_owner(self.context["request"]), name, current)
        if why is not None:
            raise serializers.ValidationError(why, code="in_use" if current else "unique")
        return name

    def validate_url(self, url: str) -> str:
        if (problem := rules.url_problem(url)) is not None:
            raise serializers.ValidationError(problem.message, code=problem.code)
        return url

    def validate_token(self, token: str) -> str:
        if (why := rules.token_problem(token)) is not None:
            raise serializers.ValidationError(why, code="invalid")
        return token

    def create(self, validated_data: dict[str, Any]) -> RemoteAgent:
        token = validated_data.pop("token", "")
        owner = request_owner(self.context["request"])
        remote = RemoteAgent(owner_id=owner.pk, **validated_data)
        remote.set_token(token)
        remote.save()
        return rules.refresh_card(remote)

    def update(self, instance: RemoteAgent, validated_data: dict[str, Any]) -> RemoteAgent:
        if "token" in validated_data:
            instance.set_token(validated_data.pop("token"))
        for field, value in validated_data.items():
            setattr(instance, field, value)
        instance.save()
        return rules.refresh_card(instance)


_ERROR = OpenApiResponse(description="{code, detail, errors?}")
_NOT_FOUND = {404: OpenApiResponse(description="Not one of your remote agents.")}


@extend_schema_view(
    list=extend_schema(summary="Your remote A2A agents (tokens never shown)"),
    retrieve=extend_schema(responses={200: RemoteAgentSerializer, **_NOT_FOUND}),
    create=extend_schema(responses={201: RemoteAgentSerializer, 400: _ERROR}),
    partial_update=extend_schema(responses={200: RemoteAgentSerializer, 400: _ERROR, **_NOT_FOUND}),
    destroy=extend_schema(
        responses={204: None, **_NOT_FOUND, 409: OpenApiResponse(description="Agents use it.")}
    ),
)
class RemoteAgentViewSet(OwnedQuerysetMixin, viewsets.ModelViewSet[RemoteAgent]):
    """Your remote A2A agents, which your agents may call through the a2a tool."""

    queryset = RemoteAgent.objects.all()
    serializer_class = RemoteAgentSerializer
    permission_classes = [*viewsets.ModelViewSet.permission_classes, IsOwner]
    parser_classes = [JSONParser]
    # No PUT: a write-only token makes "replace the whole object" ambiguous.
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def perform_destroy(self, instance: RemoteAgent) -> None:
        rules.delete_remote_agent(instance)

    @extend_schema(request=None, responses={200: RemoteAgentSerializer, **_NOT_FOUND})
    @action(detail=True, methods=["post"])
    def refresh(self, request: Request, pk: str | None = None) -> Response:
        """Read the agent's card again; a card that cannot be read is said in
        ``card_error`` (the last good card stays)."""
        remote = rules.refresh_card(self.get_object())
        return Response(RemoteAgentSerializer(remote, context={"request": request}).data)
