"""The shapes of a session in the API and the pages: what it is, what its ended runs
cost all told (``Session.cost``, kept by ``end_run``), and what starting one takes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from studio import costs, services
from studio.api.permissions import request_owner
from studio.api.serializers import OwnedPrimaryKeyRelatedField
from studio.models import Agent, Session


class SessionSerializer(serializers.ModelSerializer[Session]):
    agent = serializers.SerializerMethodField()
    agent_name = serializers.SerializerMethodField()
    external_agent = serializers.SerializerMethodField(
        help_text="The agent built elsewhere whose trace this session holds (sent over "
        "OTLP, read-only); `null` for a session of one of your agents."
    )
    agent_version = serializers.IntegerField(
        source="agent_version.number", read_only=True, allow_null=True
    )
    cost = serializers.DecimalField(
        max_digits=None,
        decimal_places=costs.PLACES,
        read_only=True,
        allow_null=True,
        help_text="What its ended runs cost, all told; `null` until one ended or when unknown.",
    )
    cost_currency = serializers.CharField(
        read_only=True, allow_null=True, help_text="Null while cost is."
    )
    cost_complete = serializers.BooleanField(
        read_only=True, help_text="Whether `cost` covers every model call of its runs."
    )
    imported_from = serializers.DictField(
        read_only=True,
        allow_null=True,
        help_text="Where a session imported from a run bundle came from (its format, "
        "version, exported and imported times, original session id, agent and fork "
        "lineage); `null` for sessions made here. An imported session is read-only.",
    )

    class Meta:
        model = Session
        fields = [
            "id",
            "title",
            "agent",
            "agent_name",
            "external_agent",
            "agent_version",
            "status",
            "state",
            "last_seq",
            "cost",
            "cost_currency",
            "cost_complete",
            "created_at",
            "updated_at",
            "parent",
            "fork_seq",
            "fork_event_id",
            "imported_from",
        ]
        read_only_fields = [f for f in fields if f != "title"]

    def to_representation(self, instance: Session) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        if instance.cost is None:
            data["cost_currency"] = None
        return data

    @extend_schema_field(serializers.UUIDField(allow_null=True))
    def get_agent(self, session: Session) -> str | None:
        version = session.agent_version
        return str(version.agent_id) if version else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_external_agent(self, session: Session) -> str | None:
        trace = getattr(session, "ingested", None)  # RelatedObjectDoesNotExist: an AttributeError
        return trace.agent.name if trace is not None else None

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_agent_name(self, session: Session) -> str | None:
        version = session.agent_version
        return version.agent.name if version else None


class SessionCreateSerializer(serializers.Serializer[Session]):
    agent = OwnedPrimaryKeyRelatedField(
        queryset=Agent.objects.all(), help_text="Pins the agent's current version."
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")

    def create(self, validated_data: dict[str, Any]) -> Session:
        return services.start_session(
            request_owner(self.context["request"]),
            validated_data["agent"],
            title=validated_data["title"],
        )
