"""The API's catalogues: what a spec may name (tools, hooks, the spec's own schema)
and the index of the API itself. Read-only, the same for every user but the tools
(bound to the user's workspace)."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio.agents import specs as agent_specs
from studio.agents.hooks import hook_registry
from studio.agents.tools import tool_registry
from studio.api import serializers as s


class ToolListView(APIView):
    """The tools a spec may name, with the JSON Schema of each one's ``settings``."""

    @extend_schema(responses=s.ToolSerializer(many=True))
    def get(self, request: Request) -> Response:
        tools = [
            {"name": e.name, "description": e.description, "settings_schema": e.settings_schema()}
            for e in tool_registry(request.user.pk)
        ]
        return Response(s.ToolSerializer(tools, many=True).data)


class HookListView(APIView):
    """The hooks a spec may name (``hooks``), with the JSON Schema of each one's ``settings``."""

    @extend_schema(responses=s.HookSerializer(many=True))
    def get(self, request: Request) -> Response:
        hooks = [
            {"name": e.name, "description": e.description, "settings_schema": e.settings_schema()}
            for e in hook_registry()
        ]
        return Response(s.HookSerializer(hooks, many=True).data)


class AgentSpecSchemaView(APIView):
    """The JSON Schema of ``AgentSpec``: what ``spec`` in an agent must look like."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(agent_specs.json_schema())


class ApiIndexView(APIView):
    """Where everything in this API is: its documentation, its OpenAPI schema, how to
    get a token, and each resource's collection."""

    RESOURCES = {
        "agents": "agent-list",
        "models": "modelconfig-list",
        "sessions": "session-list",
        "runs": "run-list",
        "approvals": "api-approvals",
        "approval_decisions": "api-approval-decisions",
        "budget": "api-budget",
        "evals": "api-evals",
        "evaluators": "api-evaluators",
        "datasets": "api-datasets",
        "memories": "api-memories",
        "skills": "api-skills",
        "prompt_templates": "api-prompt-templates",
        "mcp_servers": "mcpserver-list",
        "remote_agents": "remoteagent-list",
        "tools": "api-tools",
        "hooks": "api-hooks",
        "agent_spec_schema": "api-agent-spec-schema",
    }

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(
            {
                "name": "Studio API",
                "docs": reverse("api-docs"),
                "schema": reverse("api-schema"),
                "token": reverse("api-token"),
                "resources": {name: reverse(url) for name, url in self.RESOURCES.items()},
            }
        )
