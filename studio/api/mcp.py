"""MCP servers in the API: ``/api/mcp-servers/``.

Each user sees and uses only their own servers. Anyone may register an ``http`` server
(its URL passes the outbound check); only staff may create or change a ``stdio`` one,
which runs a program on Studio's host (403 for everyone else). Header and environment
values are write-only: responses carry their names only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError, transaction
from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import exceptions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from studio.agents import specs as agent_specs
from studio.api import mcp_fields as f
from studio.api.permissions import IsOwner, OwnedQuerysetMixin, request_owner
from studio.api.schema import OneOfBodySchema
from studio.errors import ConflictError
from studio.mcp import checks as mcp_checks
from studio.mcp import client as mcp
from studio.models import McpServer


class McpServerSerializer(f.ClosedSchema, serializers.ModelSerializer[McpServer]):
    """A server as shown, and a change to one (PATCH): fields of the other transport, or
    a different transport, conflict with the stored server (409)."""

    name = f.name_field()
    description = f.description_field()
    transport = serializers.ChoiceField(
        choices=McpServer.Transport.choices,
        help_text="http: any user, needs url. stdio: staff only, needs command. "
        "Cannot be changed once the server exists.",
    )
    url = f.url_field(required=False)
    headers = f.headers_field()
    header_names = serializers.ListField(child=serializers.CharField(), read_only=True)
    command = f.command_field(required=False)
    args = f.args_field()
    env = f.env_field()
    env_names = serializers.ListField(child=serializers.CharField(), read_only=True)
    command_line = serializers.CharField(
        read_only=True, help_text="stdio: the exact command and arguments, shell-quoted."
    )

    class Meta:
        model = McpServer
        fields = [
            "id",
            "name",
            "description",
            "transport",
            "url",
            "headers",
            "header_names",
            "command",
            "args",
            "env",
            "env_names",
            "command_line",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def validate_name(self, name: str) -> str:
        owner = request_owner(self.context["request"])
        others = McpServer.objects.filter(owner_id=owner.pk, name=name)
        current = self.instance if isinstance(self.instance, McpServer) else None
        if current is not None:
            others = others.exclude(pk=current.pk)
        if others.exists():
            raise serializers.ValidationError(
                f"you already have an MCP server named {name!r}", code="unique"
            )
        old_name = current.name if current is not None else name
        if old_name != name and (users := agent_specs.agents_using_mcp_server(owner, old_name)):
            raise serializers.ValidationError(
                f"agents name this server by its current name: {', '.join(users)}",
                code="in_use",
            )
        return name

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        current = self.instance if isinstance(self.instance, McpServer) else None
        transport = attrs.get("transport", current.transport if current else None)
        if current is not None and transport != current.transport:
            raise ConflictError(
                f"this server's transport is {current.transport}: register a new server "
                "to use another",
                code="transport_immutable",
            )
        if transport == McpServer.Transport.HTTP:
            self._refuse_fields(attrs, current, ("command", "args", "env"), "an http server")
            self._validate_http(attrs, current)
        else:
            self._refuse_fields(attrs, current, ("url", "headers"), "a stdio server")
            self._validate_stdio(attrs, current)
        return attrs

    @staticmethod
    def _refuse_fields(
        attrs: Mapping[str, Any], current: McpServer | None, fields: tuple[str, ...], what: str
    ) -> None:
        for field in fields:
            if field not in attrs:
                continue
            if current is not None:  # a well-formed change, for the wrong kind of server
                raise ConflictError(f"{what} has no {field}", code="not_for_transport")
            raise serializers.ValidationError({field: [f"{what} takes no {field}"]}, "invalid")

    def _validate_http(self, attrs: dict[str, Any], current: McpServer | None) -> None:
        url = attrs.get("url", current.url if current else "")
        if not url:
            raise serializers.ValidationError({"url": ["an http server needs a url"]}, "required")
        _check("url", mcp_checks.check_url, url)
        if "headers" in attrs:
            _check("headers", mcp_checks.check_headers, attrs["headers"])

    def _validate_stdio(self, attrs: dict[str, Any], current: McpServer | None) -> None:
        command = attrs.get("command", current.command if current else "")
        if not command:
            raise serializers.ValidationError(
                {"command": ["a stdio server needs a command"]}, "required"
            )
        _check("command", mcp_checks.check_command, command)
        if "args" in attrs:
            _check("args", mcp_checks.check_args, attrs["args"])
        if "env" in attrs:
            _check("env", mcp_checks.check_env, attrs["env"])

    def create(self, validated_data: dict[str, Any]) -> McpServer:
        owner = request_owner(self.context["request"])
        headers = validated_data.pop("headers", {})
        env = validated_data.pop("env", {})
        server = McpServer(owner_id=owner.pk, created_by_id=owner.pk, **validated_data)
        server.set_headers(headers)
        server.set_env(env)
        _save_unique(server)
        return server

    def update(self, instance: McpServer, validated_data: dict[str, Any]) -> McpServer:
        if "headers" in validated_data:
            instance.set_headers(validated_data.pop("headers"))
        if "env" in validated_data:
            instance.set_env(validated_data.pop("env"))
        for field, value in validated_data.items():
            setattr(instance, field, value)
        _save_unique(instance)
        return instance


def _save_unique(server: McpServer) -> None:
    """Save; a name taken by a concurrent request is the same 400 as one taken before."""
    try:
        with transaction.atomic():
            server.save()
    except IntegrityError:
        raise serializers.ValidationError(
            {"name": [f"you already have an MCP server named {server.name!r}"]}, "unique"
        ) from None


def _check(field: str, check: Any, value: Any) -> None:
    try:
        check(value)
    except mcp_checks.InvalidValue as exc:
        raise serializers.ValidationError({field: [exc.message]}, exc.code) from None


class HttpMcpServerCreateSerializer(f.ClosedSchema, serializers.Serializer[McpServer]):
    """Registering an http server (any user). Schema only: McpServerSerializer validates."""

    name = f.name_field()
    description = f.description_field()
    transport = serializers.ChoiceField(choices=[McpServer.Transport.HTTP.value])
    url = f.url_field(required=True)
    headers = f.headers_field()


class StdioMcpServerCreateSerializer(f.ClosedSchema, serializers.Serializer[McpServer]):
    """Registering a stdio server (staff only). Schema only: McpServerSerializer validates."""

    name = f.name_field()
    description = f.description_field()
    transport = serializers.ChoiceField(choices=[McpServer.Transport.STDIO.value])
    command = f.command_field(required=True)
    args = f.args_field()
    env = f.env_field()


_CREATE_BODY = PolymorphicProxySerializer(
    component_name="McpServerCreate",
    serializers={
        McpServer.Transport.HTTP.value: HttpMcpServerCreateSerializer,
        McpServer.Transport.STDIO.value: StdioMcpServerCreateSerializer,
    },
    resource_type_field_name="transport",
)


class McpToolInfoSerializer(serializers.Serializer[mcp.ToolInfo]):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)


class McpConnectionCheckSerializer(serializers.Serializer[mcp.ConnectionCheck]):
    ok = serializers.BooleanField()
    detail = serializers.CharField()
    latency_ms = serializers.FloatField(allow_null=True)
    tools = McpToolInfoSerializer(many=True)
    resources = McpToolInfoSerializer(
        many=True, help_text="By URI (name), with name and description."
    )
    prompts = McpToolInfoSerializer(many=True, help_text="With their arguments, e.g. review(code).")


# Every API error is {"code", "detail"}, with "errors" for invalid input.
_ERROR_BODY = inline_serializer(
    "McpError",
    {
        "code": serializers.CharField(),
        "detail": serializers.CharField(),
        "errors": serializers.ListField(child=serializers.DictField(), required=False),
    },
)

_ERRORS = {
    400: OpenApiResponse(_ERROR_BODY, description="Invalid input."),
    403: OpenApiResponse(_ERROR_BODY, description=f"stdio servers: {mcp_checks.STDIO_STAFF_ONLY}."),
}
_NOT_FOUND = {404: OpenApiResponse(_ERROR_BODY, description="Not one of your servers.")}


class _McpServerSchema(OneOfBodySchema):
    body_required_for = frozenset({"create"})  # registering a server needs a body


@extend_schema_view(
    list=extend_schema(summary="Your MCP servers (header and environment values never shown)"),
    retrieve=extend_schema(responses={200: McpServerSerializer, **_NOT_FOUND}),
    create=extend_schema(request=_CREATE_BODY, responses={201: McpServerSerializer, **_ERRORS}),
    partial_update=extend_schema(
        responses={
            200: McpServerSerializer,
            **_ERRORS,
            **_NOT_FOUND,
            409: OpenApiResponse(
                _ERROR_BODY, description="A field of the other transport, or another transport."
            ),
        }
    ),
    destroy=extend_schema(
        responses={
            204: None,
            **_NOT_FOUND,
            409: OpenApiResponse(_ERROR_BODY, description="Agents still use it."),
        }
    ),
)
class McpServerViewSet(OwnedQuerysetMixin, viewsets.ModelViewSet[McpServer]):
    """Your MCP servers, whose tools your agents may use. Header and environment values
    are write-only; stdio servers are created and changed by staff only."""

    queryset = McpServer.objects.all()
    serializer_class = McpServerSerializer
    permission_classes = [*viewsets.ModelViewSet.permission_classes, IsOwner]
    schema = _McpServerSchema()
    # JSON only: headers, args and env do not fit a form.
    parser_classes = [JSONParser]
    # No PUT: write-only secrets make "replace the whole object" ambiguous.
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = request.data
        transport = data.get("transport") if isinstance(data, Mapping) else None
        self._require_manage(request, str(transport))
        return super().create(request, *args, **kwargs)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        # Before validation: a non-staff user learns nothing about a stdio server's checks.
        self._require_manage(request, self.get_object().transport)
        return super().update(request, *args, **kwargs)

    def perform_destroy(self, instance: McpServer) -> None:
        # Deleting never grants anything, so owners may remove even a stdio server.
        if users := agent_specs.agents_using_mcp_server(instance.owner, instance.name):
            raise ConflictError(
                f"MCP server {instance.name!r} is used by: {', '.join(users)}; "
                "change those agents first",
                code="mcp_server_in_use",
            )
        instance.delete()

    @extend_schema(request=None, responses={200: McpConnectionCheckSerializer, **_NOT_FOUND})
    @action(detail=True, methods=["post"])
    def test(self, request: Request, pk: str | None = None) -> Response:
        """Connect, list the server's tools and disconnect (a stdio server is started
        and stopped); reports failure in the body rather than as an error."""
        check = async_to_sync(mcp.check_connection)(self.get_object())
        return Response(McpConnectionCheckSerializer(check).data, status=status.HTTP_200_OK)

    @staticmethod
    def _require_manage(request: Request, transport: str) -> None:
        if not mcp_checks.may_manage(request.user, transport):
            raise exceptions.PermissionDenied(mcp_checks.STDIO_STAFF_ONLY, code="staff_only")
