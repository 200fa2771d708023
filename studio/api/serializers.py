"""Request and response shapes. Writes go through ``studio.services``; every related id
a payload names is looked up among the requesting user's own objects only."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Model, QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer

from agents_core import specs as core_specs
from studio import services, wire
from studio.agents import specs as agent_specs
from studio.agents.llms import config_problem, option_problems
from studio.api.exceptions import problems_detail
from studio.api.fields import NameField, PriceField, RateLimitField
from studio.api.permissions import request_owner
from studio.errors import InvalidInputError
from studio.models import Agent, AgentVersion, ModelConfig, Run


class StoredJSONField(serializers.JSONField):
    """JSON that PostgreSQL can store: no NUL character and no lone surrogate in any
    string or key (jsonb refuses both; DRF's text fields refuse them the same way)."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        stack: list[Any] = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, str) and _UNSTORABLE.search(item):
                raise serializers.ValidationError(
                    "NUL and lone surrogate characters are not allowed.", code="unstorable_text"
                )
            if isinstance(item, dict):
                stack.extend([*item.keys(), *item.values()])
            elif isinstance(item, list):
                stack.extend(item)
        return value


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@extend_schema_field(core_specs.AgentSpec)  # type: ignore[arg-type]  # pydantic: supported
class AgentSpecField(StoredJSONField):
    """An AgentSpec document: its shape is checked by ``agent_specs.validate`` (which
    also resolves the models, tools and agents it names among the owner's own)."""


def _request_user_id(serializer: serializers.Field[Any, Any, Any, Any]) -> Any:
    return serializer.context["request"].user.pk


class OwnedPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField[Any]):
    """A related id resolved among the requesting user's objects: another user's id is
    rejected exactly like one that does not exist."""

    def __init__(self, *, owner_path: str = "owner", **kwargs: Any) -> None:
        self.owner_path = owner_path
        super().__init__(**kwargs)

    def get_queryset(self) -> QuerySet[Model]:
        queryset = super().get_queryset()
        if queryset is None:
            raise ImproperlyConfigured("OwnedPrimaryKeyRelatedField needs a queryset")
        return queryset.filter(**{self.owner_path: _request_user_id(self)})


# Model configs


NAME_TEXT = r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
"""A model config's name: at least one visible character, no control characters."""


class ModelConfigSerializer(serializers.ModelSerializer[ModelConfig]):
    # Surrounding whitespace is trimmed (Python's whitespace, U+0085 included): the
    # schema says a name needs one other character, as what is refused as blank, and no
    # control character (DRF refuses NUL; a name is shown in pages and lists).
    name = serializers.RegexField(NAME_TEXT, max_length=100)
    api_key = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=4_000,
        style={"input_type": "password"},
        help_text="Write-only. Omit to keep the stored key; send an empty string to remove it.",
    )
    api_key_hint = serializers.CharField(
        read_only=True, help_text="At most the key's last four characters, e.g. '...3xYz'."
    )
    has_api_key = serializers.BooleanField(read_only=True)
    options = StoredJSONField(
        required=False, help_text="Provider-specific settings, checked against the provider."
    )
    price_input = PriceField("input")
    price_cached_input = PriceField("cached input (null: charged as input)")
    price_output = PriceField("output")
    requests_per_minute = RateLimitField("calls")
    tokens_per_minute = RateLimitField("tokens")

    class Meta:
        model = ModelConfig
        fields = [
            "id",
            "name",
            "provider",
            "base_url",
            "model",
            "options",
            *services.PRICE_FIELDS,
            "requests_per_minute",
            "tokens_per_minute",
            "api_key",
            "api_key_hint",
            "has_api_key",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def validate_name(self, name: str) -> str:
        others = ModelConfig.objects.filter(owner_id=_request_user_id(self), name=name)
        if self.instance is not None:
            others = others.exclude(pk=self.instance.pk)
        if others.exists():
            raise serializers.ValidationError(
                f"you already have a model named {name!r}", code="unique"
            )
        current = self.instance
        if current is not None and current.name != name:
            users = agent_specs.agents_using_model(current.owner, current.name)
        else:
            users = []
        if users:
            raise serializers.ValidationError(
                f"agents name this model by its current name: {', '.join(users)}",
                code="in_use",
            )
        return name

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        provider = attrs.get("provider", getattr(self.instance, "provider", None))
        options = attrs.get("options", getattr(self.instance, "options", {}))
        model = attrs.get("model", getattr(self.instance, "model", ""))
        base_url = attrs.get("base_url", getattr(self.instance, "base_url", ""))
        if (problem := config_problem(str(provider), model, base_url)) is not None:
            raise serializers.ValidationError({problem.field: [problem.message]}, problem.code)
        if not isinstance(options, dict):
            raise serializers.ValidationError({"options": ["must be a JSON object"]})
        if problems := option_problems(str(provider), options):
            detail = problems_detail(InvalidInputError("options", problems))
            raise serializers.ValidationError({"options": detail})
        return attrs

    def create(self, validated_data: dict[str, Any]) -> ModelConfig:
        """A price left out starts as the price table's (``services.create_model_config``)."""
        return services.create_model_config(_request_user_id(self), **validated_data)

    def update(self, instance: ModelConfig, validated_data: dict[str, Any]) -> ModelConfig:
        if "api_key" in validated_data:
            instance.set_api_key(validated_data.pop("api_key"))
        for field, value in validated_data.items():
            setattr(instance, field, value)
        instance.save()
        return instance


class ConnectionCheckSerializer(serializers.Serializer[services.ConnectionCheck]):
    ok = serializers.BooleanField()
    code = serializers.CharField(
        help_text="'ok', or what failed: address_refused, dns_failed, connection_refused, "
        "unreachable, timeout, tls_failed, disconnected, unauthorized, forbidden, not_found, "
        "rate_limited, server_error, request_refused, failed."
    )
    detail = serializers.CharField(
        help_text="In words: the address, what failed there and what to check."
    )
    latency_ms = serializers.FloatField(allow_null=True)


# Agents


class AgentVersionSerializer(serializers.ModelSerializer[AgentVersion]):
    class Meta:
        model = AgentVersion
        fields = ["id", "number", "spec", "content_hash", "note", "created_at"]
        read_only_fields = fields


class AgentSerializer(serializers.ModelSerializer[Agent]):
    name = NameField(help_text='Other specs refer to the agent by this name ({"ref": name}).')
    spec = AgentSpecField(
        help_text="The current AgentSpec (see /api/agent-spec/schema/). Saving a changed "
        "spec adds a version; an unchanged one adds none."
    )
    note = serializers.CharField(
        write_only=True,
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Stored with the version this save creates.",
    )
    current_version = serializers.IntegerField(
        source="current_version.number", read_only=True, allow_null=True
    )

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "description",
            "spec",
            "note",
            "current_version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]

    def validate_name(self, name: str) -> str:
        others = Agent.objects.filter(owner_id=_request_user_id(self), name=name)
        if self.instance is not None:
            others = others.exclude(pk=self.instance.pk)
        if others.exists():
            raise serializers.ValidationError(
                f"you already have an agent named {name!r}", code="unique"
            )
        current = self.instance if isinstance(self.instance, Agent) else None
        if current is not None and current.name != name:
            users = agent_specs.agents_referencing(current.owner, current.name)
            if users:
                raise serializers.ValidationError(
                    f"agents refer to this one by its current name: {', '.join(users)}",
                    code="in_use",
                )
        return name

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "spec" in attrs:
            name = attrs.get("name", getattr(self.instance, "name", None))
            owner = request_owner(self.context["request"])
            try:
                agent_specs.validate(owner, attrs["spec"], agent_name=name)
            except InvalidInputError as exc:
                raise serializers.ValidationError({"spec": problems_detail(exc)}) from None
        elif self.instance is None:
            raise serializers.ValidationError({"spec": ["a new agent needs a spec"]}, "required")
        return attrs

    def create(self, validated_data: dict[str, Any]) -> Agent:
        return services.create_agent(
            request_owner(self.context["request"]),
            name=validated_data["name"],
            description=validated_data.get("description", ""),
            spec=validated_data["spec"],
            note=validated_data.get("note", ""),
        )

    def update(self, instance: Agent, validated_data: dict[str, Any]) -> Agent:
        return services.update_agent(
            instance,
            name=validated_data.get("name"),
            description=validated_data.get("description"),
            spec=validated_data.get("spec"),
            note=validated_data.get("note", ""),
        )


class AgentDocumentSerializer(serializers.Serializer[dict[str, Any]]):
    """The agent import/export format."""

    format = serializers.ChoiceField(choices=[services.AGENT_FORMAT])
    format_version = serializers.ChoiceField(choices=[services.FORMAT_VERSION])
    name = NameField()
    description = serializers.CharField(allow_blank=True, required=False, default="")
    spec = AgentSpecField()
    exported_at = serializers.DateTimeField(required=False, read_only=True)

    def validate_name(self, name: str) -> str:
        return AgentSerializer(context=self.context).validate_name(name)


# Sessions, events, runs


class TextMessageSerializer(serializers.Serializer[dict[str, Any]]):
    """A message as JSON: text only (files need a multipart body)."""

    text = serializers.CharField(max_length=50_000)


class MessageSerializer(TextMessageSerializer):
    """A message as a multipart body: its text and any files attached to it."""

    files = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        # The schema says how many (maxItems); studio.files says it again in words.
        max_length=settings.STUDIO_UPLOAD_MAX_FILES,
        help_text="Multipart only: images (PNG, JPEG, GIF, WebP), PDFs or plain text, "
        "checked by their bytes; for models that take them.",
    )


class RunTimingSerializer(serializers.Serializer[Any]):
    """Where an ended run's wall time went, in milliseconds (``studio.timing``): the
    parts add up to ``total_ms``."""

    total_ms = serializers.FloatField(help_text="From queueing the run to its end.")
    queued_ms = serializers.FloatField(help_text="Waiting for a server or worker to start it.")
    model_ms = serializers.FloatField(help_text="Model calls.")
    tools_ms = serializers.FloatField(help_text="Tool calls (not their wait for approval).")
    human_ms = serializers.FloatField(help_text="Waiting for a person's approval.")
    overhead_ms = serializers.FloatField(
        help_text="The rest: storing events, connecting MCP servers, building the agent."
    )


class RunSerializer(serializers.ModelSerializer[Run]):
    timing = RunTimingSerializer(read_only=True, allow_null=True)
    cost_currency = serializers.CharField(
        read_only=True, allow_null=True, help_text="Null while cost is."
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "session",
            "invocation_id",
            "message",
            "status",
            "created_at",
            "started_at",
            "ended_at",
            "input_tokens",
            "output_tokens",
            "cost",
            "cost_currency",
            "cost_complete",
            "error_code",
            "error_message",
            "timing",
            "resumed_from",
            "copied_from",
            "replay_of",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Run) -> dict[str, Any]:
        """The one wire form of a run (``studio.wire``), as websockets and exports."""
        return wire.run_payload(instance)


class TokenCredentialsSerializer(AuthTokenSerializer):
    """A username and password; wrong ones answer 400 with code ``authorization``."""

    username = serializers.CharField(max_length=150, write_only=True)
    password = serializers.CharField(
        max_length=4_096, write_only=True, trim_whitespace=False, style={"input_type": "password"}
    )


class TokenSerializer(serializers.Serializer[Any]):
    token = serializers.CharField()


class ToolSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    description = serializers.CharField()
    settings_schema = serializers.JSONField()


class HookSerializer(ToolSerializer):
    """A registered hook: the same shape as a tool."""
