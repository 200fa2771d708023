"""Portable run bundles in the API (``studio.bundles``, ``docs/bundles.md``).

- ``GET /api/sessions/<id>/bundle/``: the session as a bundle (JSON; ``?zip=1``: a
  ``.studio-run.zip`` holding ``bundle.json``). The owner's only (others: 404).
- ``POST /api/bundles/import/``: a multipart ``file`` (.json or .zip) becomes a
  read-only session of the caller; 201 with it. A bundle that is too large, broken,
  of an unknown version, holds a secret or is inconsistent answers 400 with the path
  of the problem and stores nothing.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import bundles, services
from studio.api import session_serializers as ss
from studio.api.permissions import request_owner
from studio.api.schema import error_responses
from studio.models import Session


class BundleUploadSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(
        help_text="A run bundle: its JSON (`.json`) or a `.studio-run.zip` holding "
        f"`bundle.json`; at most {bundles.MAX_BYTES} bytes, unpacked too."
    )


def read_file(upload: Any) -> bytes:
    """At most one byte past the limit of an uploaded file (the check says too large)."""
    data: bytes = upload.read(bundles.MAX_BYTES + 1)
    return data


class SessionBundles:
    """``bundle`` for the session viewset."""

    get_object: Any

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "zip", {"type": "integer", "enum": [0, 1]}, description="1: a zip file."
            )
        ],
        responses={
            (200, "application/json"): OpenApiResponse(
                OpenApiTypes.OBJECT, description="A run bundle (docs/bundle.schema.json)."
            ),
            (200, "application/zip"): OpenApiResponse(
                OpenApiTypes.BINARY, description="A .studio-run.zip holding bundle.json."
            ),
        },
    )
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def bundle(self, request: Request, pk: str | None = None) -> HttpResponse:
        """The session as a portable run bundle: its runs, events, agent spec, model
        configurations (no secrets), tool schemas, approval decisions, fork lineage and
        the bytes of the files its messages attached."""
        session: Session = self.get_object()
        zipped = request.query_params.get("zip") == "1"
        body, content_type, name = services.export_bundle(session, zipped=zipped)
        response = HttpResponse(body, content_type=content_type)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class BundleImportView(APIView):
    """Import a run bundle as a read-only session of yours."""

    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": BundleUploadSerializer},
        responses={201: ss.SessionSerializer, **error_responses(400)},
    )
    def post(self, request: Request) -> Response:
        """Import a run bundle (.json or .studio-run.zip) as a read-only session: drawn in
        the timeline and waterfall like any other, replayable on its recorded outputs,
        taking no new message (409 `session_read_only`). Refused with 400 and nothing
        stored when too large, broken, of an unknown version, or holding a secret."""
        upload = BundleUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        file = upload.validated_data["file"]
        session = services.import_bundle(request_owner(request), file.name or "", read_file(file))
        return Response(ss.SessionSerializer(session).data, status=status.HTTP_201_CREATED)
