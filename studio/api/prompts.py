"""Prompt templates in the API: ``/api/prompt-templates/``.

Each user sees only their own templates. ``POST`` saves a text as the next version of a
name (a template that does not compile, or that reaches past the sandbox's bounds, is a
400 that says why); ``GET <name>/`` lists its versions, newest first; ``DELETE <name>/``
removes every version unless an agent version renders it (409). ``POST preview/``
renders a text against sample state, exactly as a run would.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents_core import prompts as core_prompts
from agents_core import specs as core_specs
from studio import prompts, services
from studio.api.mcp_fields import ClosedSchema
from studio.api.permissions import request_owner
from studio.api.schema import OneOfBodySchema
from studio.models import PromptTemplate

MAX_PREVIEW_STATE_CHARS = 100_000


def _source_field(*, required: bool = True) -> serializers.CharField:
    return serializers.CharField(
        required=required,
        max_length=core_prompts.MAX_SOURCE_CHARS,
        trim_whitespace=False,
        help_text="Jinja, rendered in a sandbox with the session state as its variables.",
    )


class PromptTemplateSerializer(serializers.ModelSerializer[PromptTemplate]):
    """One version of a template."""

    name = serializers.RegexField(
        core_specs.NAME_PATTERN,
        max_length=64,
        error_messages={"invalid": core_specs.NAME_RULE},
    )
    # A field named like DRF's own Field.source attribute: the metaclass takes it out.
    source = _source_field()  # type: ignore[assignment]
    description = serializers.CharField(max_length=200, required=False, allow_blank=True)

    class Meta:
        model = PromptTemplate
        fields = ["id", "name", "version", "source", "description", "created_at"]
        read_only_fields = ["id", "version", "created_at"]


class PreviewSerializer(serializers.Serializer[object]):
    """A text to render, or one of your stored templates by name (and version: the
    latest without one)."""

    source = _source_field(required=False)  # type: ignore[assignment]
    name = serializers.RegexField(
        core_specs.NAME_PATTERN,
        max_length=64,
        required=False,
        error_messages={"invalid": core_specs.NAME_RULE},
    )
    version = serializers.IntegerField(min_value=1, required=False)
    state = serializers.DictField(
        required=False,
        default=dict,
        help_text="Sample session state: its keys are the template's variables.",
    )

    def validate_state(self, state: dict[str, Any]) -> dict[str, Any]:
        if len(repr(state)) > MAX_PREVIEW_STATE_CHARS:
            raise serializers.ValidationError(
                f"sample state may be at most {MAX_PREVIEW_STATE_CHARS} characters"
            )
        return state

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("source" in attrs) == ("name" in attrs):
            raise serializers.ValidationError(
                {"source": "give the text to render, or a stored template's name (not both)"}
            )
        if "version" in attrs and "name" not in attrs:
            raise serializers.ValidationError({"version": "a version needs a template name"})
        return attrs


def _state_field() -> serializers.DictField:
    return serializers.DictField(
        required=False, help_text="Sample session state: its keys are the template's variables."
    )


class _TextPreview(ClosedSchema, serializers.Serializer[object]):
    """Render this text."""

    source = _source_field()  # type: ignore[assignment]
    state = _state_field()


class _StoredPreview(ClosedSchema, serializers.Serializer[object]):
    """Render one of your stored templates: the latest version, or ``version``."""

    name = serializers.RegexField(core_specs.NAME_PATTERN, max_length=64)
    version = serializers.IntegerField(min_value=1, required=False)
    state = _state_field()


_PREVIEW_BODY = PolymorphicProxySerializer(
    component_name="PromptTemplatePreview",
    serializers=[_TextPreview, _StoredPreview],
    resource_type_field_name=None,
)
"""What the schema says a preview takes: a text or a stored template, never both;
``PreviewSerializer`` checks the same at run time, saying which."""


class PreviewResultSerializer(serializers.Serializer[object]):
    text = serializers.CharField(help_text="What the model would be sent, as plain text.")


class PromptTemplateListView(APIView):
    """Your prompt templates (the latest version of each), and a new version of one."""

    parser_classes = [JSONParser]

    @extend_schema(responses=PromptTemplateSerializer(many=True))
    def get(self, request: Request) -> Response:
        latest = prompts.latest_versions(request.user.pk)
        return Response(PromptTemplateSerializer(latest, many=True).data)

    @extend_schema(request=PromptTemplateSerializer, responses={201: PromptTemplateSerializer})
    def post(self, request: Request) -> Response:
        body = PromptTemplateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        saved = services.save_template(request_owner(request), **body.validated_data)
        return Response(PromptTemplateSerializer(saved).data, status=status.HTTP_201_CREATED)


class PromptTemplateDetailView(APIView):
    """Every version of one of your templates, newest first; deleting removes them all."""

    @extend_schema(
        operation_id="prompt_templates_versions",
        responses={200: PromptTemplateSerializer(many=True), 404: OpenApiResponse()},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(PromptTemplateSerializer(self._versions(request, name), many=True).data)

    @extend_schema(responses={204: None, 404: OpenApiResponse(), 409: OpenApiResponse()})
    def delete(self, request: Request, name: str) -> Response:
        self._versions(request, name)
        services.delete_template(request_owner(request), name)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _versions(request: Request, name: str) -> list[PromptTemplate]:
        found = prompts.versions(request.user.pk, name)
        if not found:
            raise NotFound(f"no prompt template {name!r}")
        return found


class PromptTemplatePreviewView(APIView):
    """Render a template text, or one of your stored templates, against sample state,
    as a run would: nothing is saved."""

    parser_classes = [JSONParser]
    schema = OneOfBodySchema()

    @extend_schema(
        request=_PREVIEW_BODY, responses={200: PreviewResultSerializer, 404: OpenApiResponse()}
    )
    def post(self, request: Request) -> Response:
        body = PreviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        source = data.get("source")
        if source is None:
            stored = prompts.OwnerTemplates(request.user.pk).get(data["name"], data.get("version"))
            if stored is None:
                raise NotFound(f"no prompt template {data['name']!r}")
            source = stored.source
        return Response({"text": services.preview_template(source, data["state"])})
