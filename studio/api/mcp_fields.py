"""The MCP API's fields, each with the OpenAPI schema of exactly what it accepts: the
patterns are ``studio.mcp``'s own checks, so a value the schema admits is one the API
accepts (schemathesis relies on it). The schema extensions register on import."""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from rest_framework import serializers

from studio.api.fields import NameField
from studio.mcp import checks as mcp_checks


class HeaderMapField(serializers.DictField):
    """HTTP headers: names and values as ``studio.mcp`` checks them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=value_field(), **kwargs)


class EnvMapField(serializers.DictField):
    """Environment variables: names from ``STUDIO_MCP_ENV_ALLOWLIST`` only."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=value_field(), **kwargs)


def value_field() -> serializers.RegexField:
    return serializers.RegexField(
        mcp_checks.VALUE_PATTERN,
        max_length=mcp_checks.MAX_VALUE_CHARS,
        allow_blank=True,
        trim_whitespace=False,
    )


class _HeaderMapSchema(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]
    target_class = HeaderMapField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer_field(
            self.target, direction, bypass_extensions=True
        )
        return {
            **schema,
            "propertyNames": {"pattern": mcp_checks.HEADER_NAME_PATTERN},
            "maxProperties": mcp_checks.MAX_HEADERS,
        }


class _EnvMapSchema(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]
    target_class = EnvMapField

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer_field(
            self.target, direction, bypass_extensions=True
        )
        names = sorted(
            n for n in mcp_checks.env_allowlist() if re.fullmatch(mcp_checks.ENV_NAME_PATTERN, n)
        )
        if not names:
            return {**schema, "maxProperties": 0}
        return {**schema, "propertyNames": {"enum": names}, "maxProperties": mcp_checks.MAX_ENV}


class ClosedSchema:
    """A serializer whose schema admits no property it does not name."""


class _ClosedSchema(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    target_class = ClosedSchema
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "response":
            # What a request must match, a response need not: an http server shows an
            # empty command, a stdio one an empty url.
            for name in ("url", "command"):
                if name in schema["properties"]:
                    schema["properties"][name] = {
                        k: v
                        for k, v in schema["properties"][name].items()
                        if k not in ("pattern", "minLength")
                    }
        return {**schema, "additionalProperties": False}


def name_field() -> NameField:
    return NameField(
        help_text="Letters, digits, '_' or '-', starting with a letter or '_': agent specs "
        'name the server by it ({"mcp": [{"server": name}]}).',
    )


def description_field() -> serializers.CharField:
    return serializers.CharField(max_length=500, required=False, allow_blank=True)


def url_field(*, required: bool) -> serializers.RegexField:
    return serializers.RegexField(
        mcp_checks.URL_PATTERN,
        max_length=mcp_checks.MAX_URL_CHARS,
        required=required,
        help_text="http only: the streamable HTTP endpoint. Loopback, private, link-local "
        "and metadata addresses are refused unless STUDIO_OUTBOUND_ALLOWLIST admits them.",
    )


def headers_field() -> HeaderMapField:
    return HeaderMapField(
        write_only=True,
        required=False,
        help_text="http only. Write-only: sent with every request (e.g. Authorization), "
        "stored encrypted. Omit to keep the stored headers; {} removes them.",
    )


def command_field(*, required: bool) -> serializers.RegexField:
    return serializers.RegexField(
        mcp_checks.COMMAND_PATTERN,
        max_length=mcp_checks.MAX_COMMAND_CHARS,
        required=required,
        trim_whitespace=False,
        help_text="stdio only: the program, run exactly as given, without a shell.",
    )


def args_field() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.RegexField(
            mcp_checks.ARG_PATTERN,
            max_length=mcp_checks.MAX_VALUE_CHARS,
            allow_blank=True,
            trim_whitespace=False,
        ),
        max_length=mcp_checks.MAX_ARGS,
        required=False,
        help_text="stdio only: the program's arguments, each passed as is.",
    )


def env_field() -> EnvMapField:
    return EnvMapField(
        write_only=True,
        required=False,
        help_text="stdio only. Write-only: environment variables, each named in "
        "STUDIO_MCP_ENV_ALLOWLIST; stored encrypted. Omit to keep them; {} removes them.",
    )
