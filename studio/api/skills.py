"""Skills in the API: ``/api/skills/``.

Each user sees only their own skills. ``GET`` lists the latest version of each;
``POST`` (multipart) uploads one, as a zip ``archive`` or as a folder's ``files`` with
their relative ``paths`` in the same order; the upload becomes the next version of the
name its ``SKILL.md`` gives, or a 400 that says what is wrong (and nothing is stored).
``GET <name>/`` lists its versions, newest first, with their bodies and file paths;
``DELETE <name>/`` removes every version unless an agent version attaches it (409).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ErrorDetail, NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents_core import skills as core_skills
from studio import services, skills
from studio.api.permissions import request_owner
from studio.models import Skill
from studio.skills.archive import MAX_ARCHIVE_BYTES


class SkillSerializer(serializers.ModelSerializer[Skill]):
    """One version of a skill: what its ``SKILL.md`` front matter says."""

    class Meta:
        model = Skill
        fields = ["id", "name", "version", "description", "size", "created_at"]
        read_only_fields = fields


class SkillFileSerializer(serializers.Serializer[Any]):
    path = serializers.CharField()
    size = serializers.IntegerField()


class SkillDetailSerializer(SkillSerializer):
    """A version with its ``SKILL.md`` body (Markdown, as text) and its other files."""

    files = SkillFileSerializer(many=True, read_only=True)

    class Meta(SkillSerializer.Meta):
        fields = [*SkillSerializer.Meta.fields, "body", "files"]
        read_only_fields = fields


class SkillUploadSerializer(serializers.Serializer[Any]):
    """A zip ``archive``, or a folder's ``files`` with their ``paths`` (not both). The
    schema cannot say so: a ``oneOf`` of multipart bodies with files is beyond the
    tools that read it (schemathesis), so the rule is checked here, with its own code."""

    archive = serializers.FileField(
        required=False, help_text="A zip of the skill's folder, with SKILL.md at its top."
    )
    files = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        max_length=core_skills.MAX_FILES,
        help_text="A folder's files, one part each.",
    )
    paths = serializers.ListField(
        child=serializers.CharField(max_length=255),
        required=False,
        max_length=core_skills.MAX_FILES,
        help_text="Each file's path inside the folder, in the order of files.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("archive" in attrs) == bool(attrs.get("files")):
            raise serializers.ValidationError(
                {
                    "archive": ErrorDetail(
                        "send a zip archive or a folder's files (not both)",
                        code="archive_or_files",
                    )
                }
            )
        if "files" in attrs and len(attrs.get("paths", [])) != len(attrs["files"]):
            raise serializers.ValidationError(
                {"paths": ErrorDetail("give one path for each file", code="paths_mismatch")}
            )
        archive = attrs.get("archive")
        if archive is not None and archive.size > MAX_ARCHIVE_BYTES:
            raise serializers.ValidationError(
                {"archive": f"an archive may be at most {MAX_ARCHIVE_BYTES} bytes"}
            )
        return attrs


def _upload(request: Request, data: dict[str, Any]) -> Skill:
    """The validated upload ``data``, stored for the request's user."""
    owner = request_owner(request)
    if "archive" in data:
        return services.upload_skill_zip(owner, data["archive"].read())
    pairs = ((path, file.read()) for path, file in zip(data["paths"], data["files"], strict=True))
    return services.upload_skill_folder(owner, pairs)


class SkillListView(APIView):
    """Your skills (the latest version of each), and an upload."""

    parser_classes = [MultiPartParser]

    @extend_schema(responses=SkillSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(SkillSerializer(skills.latest_versions(request.user.pk), many=True).data)

    @extend_schema(
        request={"multipart/form-data": SkillUploadSerializer},
        responses={201: SkillDetailSerializer, 400: OpenApiResponse()},
    )
    def post(self, request: Request) -> Response:
        body = SkillUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        saved = _upload(request, body.validated_data)
        return Response(SkillDetailSerializer(saved).data, status=status.HTTP_201_CREATED)


class SkillDetailView(APIView):
    """Every version of one of your skills, newest first; deleting removes them all."""

    @extend_schema(
        operation_id="skills_versions",
        responses={200: SkillDetailSerializer(many=True), 404: OpenApiResponse()},
    )
    def get(self, request: Request, name: str) -> Response:
        return Response(SkillDetailSerializer(self._versions(request, name), many=True).data)

    @extend_schema(responses={204: None, 404: OpenApiResponse(), 409: OpenApiResponse()})
    def delete(self, request: Request, name: str) -> Response:
        self._versions(request, name)
        services.delete_skill(request_owner(request), name)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _versions(request: Request, name: str) -> list[Skill]:
        found = skills.versions(request.user.pk, name)
        if not found:
            raise NotFound(f"no skill {name!r}")
        return found
