"""The OpenAPI description of every error the API answers with (``studio.api.exceptions``).

Every operation documents the errors any request may meet: 401 and 403 when it needs a
signed-in user, 400 and 415 when it reads a body, 400 when it reads query parameters,
404 when it names an object or pages through a list. Errors that depend on what the
request does (409 conflicts, 429 limits) are declared on the views with
``error_responses()``; a postprocessing hook adds the rest, so no view can forget them.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

ERROR_REF = {"$ref": "#/components/schemas/Error"}

_DESCRIPTIONS = {
    400: "The request is malformed or invalid: `errors` lists each problem.",
    401: "Not signed in: send `Authorization: Token <key>` or a session cookie.",
    403: "Not allowed (for a session cookie: the CSRF token is missing or wrong).",
    404: "No such object among yours (or no such page).",
    409: "The request conflicts with the object's current state.",
    415: "The body is not JSON (or a form).",
    429: "A limit was reached; try again later.",
}


class ProblemSerializer(serializers.Serializer[Any]):
    path = serializers.CharField(help_text="Dotted path of the field ('' for the whole body).")
    code = serializers.CharField()
    detail = serializers.CharField()


class ErrorSerializer(serializers.Serializer[Any]):
    """Every error body: a machine-readable ``code`` and a sentence; validation errors
    (400 ``invalid``) add ``errors``, one per problem."""

    code = serializers.CharField()
    detail = serializers.CharField()
    errors = ProblemSerializer(many=True, required=False)


def error_responses(*statuses: int) -> dict[int, OpenApiResponse]:
    """``extend_schema(responses=...)`` entries for errors a particular view raises."""
    return {
        status: OpenApiResponse(response=ErrorSerializer, description=_DESCRIPTIONS[status])
        for status in statuses
    }


def add_error_responses(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the errors of the module docstring."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    # Replaces the components ErrorSerializer produces: the same shape, closed.
    schemas["Error"] = _error_component()
    schemas["Problem"] = _problem_component()
    for operation in _operations(result):
        responses = operation.setdefault("responses", {})
        for status in _generic_statuses(operation):
            responses.setdefault(
                str(status),
                {"description": _DESCRIPTIONS[status], "content": _json(ERROR_REF)},
            )
    return result


def _operations(result: dict[str, Any]) -> list[dict[str, Any]]:
    methods = {"get", "put", "post", "patch", "delete"}
    return [
        operation
        for path_item in result.get("paths", {}).values()
        for method, operation in path_item.items()
        if method in methods
    ]


def _generic_statuses(operation: dict[str, Any]) -> list[int]:
    parameters = operation.get("parameters", [])
    statuses = []
    security = operation.get("security", [])
    if security and {} not in security:
        statuses += [401, 403]
    if "requestBody" in operation:
        statuses += [400, 415]
    elif any(p["in"] == "query" for p in parameters):
        statuses.append(400)
    paged = any(p["in"] == "query" and p["name"] in {"page", "cursor"} for p in parameters)
    if paged or any(p["in"] == "path" for p in parameters):
        statuses.append(404)
    return statuses


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _error_component() -> dict[str, Any]:
    return {
        "type": "object",
        "description": ErrorSerializer.__doc__,
        "properties": {
            "code": {"type": "string"},
            "detail": {"type": "string"},
            "errors": {"type": "array", "items": {"$ref": "#/components/schemas/Problem"}},
        },
        "required": ["code", "detail"],
        "additionalProperties": False,
    }


def _problem_component() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "code": {"type": "string"},
            "detail": {"type": "string"},
        },
        "required": ["path", "code", "detail"],
        "additionalProperties": False,
    }
