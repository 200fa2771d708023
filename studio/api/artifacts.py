"""A session's artifacts in the API: ``/api/sessions/<id>/artifacts/``.

``GET`` lists the newest version of each artifact; ``POST`` (multipart: ``name``,
``file``, optional ``content_type``) saves a new version; ``<name>/versions/`` lists
every version, newest first; ``<name>/download/`` answers the bytes (``?version=``,
the newest by default) as an attachment, with ``X-Content-Type-Options: nosniff`` and a
sandboxing ``Content-Security-Policy``, served as the type ``studio.artifacts`` decided
from the bytes (raster images, plain text, else ``application/octet-stream``).
``?inline=1`` shows a raster image in place (for previews); nothing else is ever served
inline. Another user's session answers 404.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import HttpResponse
from django.urls import reverse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents_core import artifacts as core
from studio import artifacts
from studio.api.permissions import request_owner
from studio.errors import InvalidInputError, Problem
from studio.models import Artifact, Session

SANDBOX = "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'"
"""The policy a downloaded artifact is served under: should a browser ever render one,
it runs nothing and reaches nothing."""


class ArtifactSerializer(serializers.ModelSerializer[Artifact]):
    """One version of an artifact. ``content_type`` is what its saver declared;
    ``served_type`` what a download is served as."""

    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Artifact
        fields = [
            "name",
            "version",
            "content_type",
            "served_type",
            "size",
            "sha256",
            "created_at",
            "download_url",
        ]
        read_only_fields = fields

    def get_download_url(self, artifact: Artifact) -> str:
        return download_url(artifact)


class PartField(serializers.FileField):
    """A multipart part's bytes: a file part, or a part sent without a file name (which
    Django reads as a form field): its text, as UTF-8."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str):
            return SimpleUploadedFile("", data.encode("utf-8"), "application/octet-stream")
        return super().to_internal_value(data)


class ArtifactUploadSerializer(serializers.Serializer[object]):
    name = serializers.CharField(max_length=core.MAX_NAME_CHARS, trim_whitespace=False)
    file = PartField(allow_empty_file=True, use_url=False)
    content_type = serializers.RegexField(
        r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$",
        required=False,
        help_text="The file's type; when left out, the type its part declares.",
    )


def download_url(artifact: Artifact, *, inline: bool = False) -> str:
    url = reverse("api-artifact-download", args=[artifact.session_id, artifact.name])
    url = f"{url}?version={artifact.version}"
    return f"{url}&inline=1" if inline else url


def owned_session(request: Request, pk: UUID) -> Session:
    found = Session.objects.filter(owner_id=request_owner(request).pk, pk=pk).first()
    if found is None:
        raise NotFound("no such session")
    return found


class ArtifactListView(APIView):
    """The newest version of each of a session's artifacts, and saving a new one."""

    parser_classes = [MultiPartParser]

    @extend_schema(responses={200: ArtifactSerializer(many=True), 404: OpenApiResponse()})
    def get(self, request: Request, id: UUID) -> Response:
        rows = artifacts.newest(owned_session(request, id))
        return Response(ArtifactSerializer(rows, many=True).data)

    @extend_schema(
        request={"multipart/form-data": ArtifactUploadSerializer},
        responses={201: ArtifactSerializer, 404: OpenApiResponse()},
    )
    def post(self, request: Request, id: UUID) -> Response:
        session = owned_session(request, id)
        body = ArtifactUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        limit = settings.STUDIO_ARTIFACT_MAX_BYTES
        if upload.size is None or upload.size > limit:
            message = f"an artifact may be at most {limit} bytes; this one is {upload.size} bytes"
            raise InvalidInputError("file", [Problem((), "file_too_large", message)])
        name = body.validated_data["name"]
        content_type = body.validated_data.get("content_type") or _declared(upload.content_type)
        try:
            saved = artifacts.save(session, name, upload.read(), content_type)
        except core.ArtifactError as exc:
            raise InvalidInputError("name", [Problem((), "artifact_name", str(exc))]) from None
        return Response(ArtifactSerializer(saved).data, status=status.HTTP_201_CREATED)


class ArtifactVersionsView(APIView):
    """Every version of one of a session's artifacts, newest first."""

    @extend_schema(responses={200: ArtifactSerializer(many=True), 404: OpenApiResponse()})
    def get(self, request: Request, id: UUID, name: str) -> Response:
        rows = list(artifacts.versions(owned_session(request, id), name))
        if not rows:
            raise NotFound("no such artifact")
        return Response(ArtifactSerializer(rows, many=True).data)


class ArtifactDownloadView(APIView):
    """The bytes of one version of an artifact, as an attachment."""

    @extend_schema(
        parameters=[
            OpenApiParameter("version", OpenApiTypes.INT, description="The newest if left out."),
            OpenApiParameter(
                "inline", OpenApiTypes.BOOL, description="Show a raster image in place."
            ),
        ],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            404: OpenApiResponse(),
        },
    )
    def get(self, request: Request, id: UUID, name: str) -> HttpResponse:
        session = owned_session(request, id)
        version = _version(request.query_params.get("version"))
        found = artifacts.find(session, name, version)
        if found is None:
            raise NotFound("no such artifact")
        try:
            data = artifacts.read(found)
        except FileNotFoundError:
            raise NotFound("the artifact's bytes are gone") from None
        return served(found, data, inline=request.query_params.get("inline") in {"1", "true"})


def served(artifact: Artifact, data: bytes, *, inline: bool) -> HttpResponse:
    """``data`` as a download: inline only for raster images, and never sniffed."""
    response = HttpResponse(data, content_type=artifact.served_type)
    as_attachment = not (inline and artifact.is_image)
    disposition = content_disposition_header(as_attachment, artifact.name)
    response["Content-Disposition"] = disposition or "attachment"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX
    response["Cache-Control"] = "private, no-store"
    return response


def _declared(content_type: str | None) -> str:
    """The type the multipart part declared, when it reads as one."""
    try:
        return core.checked_content_type(content_type or "")
    except core.ArtifactError:
        return "application/octet-stream"


def _version(raw: Any) -> int | None:
    if raw in (None, ""):
        return None
    try:
        number = int(raw)
    except (TypeError, ValueError):
        raise NotFound("no such version") from None
    if number < 1:
        raise NotFound("no such version")
    return number
