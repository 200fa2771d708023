"""Memories in the API: ``/api/memories/``.

Each user sees only their own memories: ``GET`` lists them newest first, or with
``?q=`` the ones sharing a word with the query, best first (``?agent=`` for one
agent's); ``POST`` writes one; ``PATCH <id>/`` replaces its text; ``DELETE <id>/``
forgets it. Another user's memory answers 404.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents_core import memory as core_memory
from studio import memory, services
from studio.api.permissions import request_owner
from studio.models import Memory

MAX_LISTED = 100


class MemorySerializer(serializers.ModelSerializer[Memory]):
    """One memory; ``session`` is the session that wrote it (``null`` once deleted,
    or for one written by hand)."""

    agent = serializers.CharField(max_length=64)
    text = serializers.CharField(max_length=core_memory.MAX_MEMORY_CHARS)

    class Meta:
        model = Memory
        fields = ["id", "agent", "text", "session", "created_at", "updated_at"]
        read_only_fields = ["id", "session", "created_at", "updated_at"]


class MemoryTextSerializer(serializers.Serializer[object]):
    text = serializers.CharField(max_length=core_memory.MAX_MEMORY_CHARS)


class MemoryListView(APIView):
    """Your memories (searched with ``q``, of one ``agent``), and a new one."""

    parser_classes = [JSONParser]

    @extend_schema(
        parameters=[
            OpenApiParameter("q", OpenApiTypes.STR, description="Words to search for."),
            OpenApiParameter("agent", OpenApiTypes.STR, description="One agent's memories."),
        ],
        responses=MemorySerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        query = request.query_params.get("q", "")[:500]
        agent = request.query_params.get("agent") or None
        found = memory.search(request_owner(request).pk, agent, query, MAX_LISTED)
        return Response(MemorySerializer(found, many=True).data)

    @extend_schema(request=MemorySerializer, responses={201: MemorySerializer})
    def post(self, request: Request) -> Response:
        body = MemorySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        saved = services.add_memory(request_owner(request), data["agent"], data["text"])
        return Response(MemorySerializer(saved).data, status=status.HTTP_201_CREATED)


class MemoryDetailView(APIView):
    """One of your memories: read, edit its text, or forget it."""

    parser_classes = [JSONParser]

    @extend_schema(responses={200: MemorySerializer, 404: OpenApiResponse()})
    def get(self, request: Request, pk: int) -> Response:
        return Response(MemorySerializer(self._found(request, pk)).data)

    @extend_schema(
        request=MemoryTextSerializer, responses={200: MemorySerializer, 404: OpenApiResponse()}
    )
    def patch(self, request: Request, pk: int) -> Response:
        found = self._found(request, pk)
        body = MemoryTextSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        edited = services.edit_memory(found, body.validated_data["text"])
        return Response(MemorySerializer(edited).data)

    @extend_schema(responses={204: None, 404: OpenApiResponse()})
    def delete(self, request: Request, pk: int) -> Response:
        self._found(request, pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @staticmethod
    def _found(request: Request, pk: int) -> Memory:
        found = memory.owned(request_owner(request).pk).filter(pk=pk).first()
        if found is None:
            raise NotFound("no such memory")
        return found
