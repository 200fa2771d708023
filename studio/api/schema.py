"""The OpenAPI description of every error the API answers with (``studio.api.exceptions``).

Every operation documents the errors any request may meet: 401 and 403 when it needs a
signed-in user, 400 and 415 when it reads a body, 400 when it reads query parameters,
404 when it names an object or pages through a list. Errors that depend on what the
request does (409 conflicts, 429 limits) are declared on the views with
``error_responses()``; a postprocessing hook adds the rest, so no view can forget them.

The same hook states two rules DRF applies to every text field it reads, which
drf-spectacular leaves out: no NUL characters, and (for a field that may not be blank)
at least one character that is not whitespace, since surrounding whitespace is trimmed.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

ERROR_REF = {"$ref": "#/components/schemas/Error"}


class OneOfBodySchema(AutoSchema):
    """A view whose request body is a ``oneOf``: it has no top-level ``required``, so
    drf-spectacular would call the body optional. ``body_required_for`` names the
    actions (or, on a plain view, the methods) that need one."""

    body_required_for: frozenset[str] = frozenset({"create", "post"})

    def _get_request_body(self, direction: str = "request") -> dict[str, Any] | None:
        body: dict[str, Any] | None = super()._get_request_body(direction)  # type: ignore[no-untyped-call]
        action = getattr(self.view, "action", None) or self.method.lower()
        if body is not None and action in self.body_required_for:
            body["required"] = True
        return body


NO_NUL = "^[^\\x00]*$"
# The characters DRF's CharField strips (Python's str.isspace), spelled out: a JSON
# Schema's \s is another set (without \x1c-\x1f and \x85, with \ufeff), so a text
# of "\x1f" met the schema and was refused as blank.
SPACE = "\\t-\\r\\x1c- \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
NOT_BLANK = f"^[^\\x00]*[^\\x00{SPACE}][^\\x00]*$"

_DESCRIPTIONS = {
    400: "The request is malformed or invalid: `errors` lists each problem.",
    401: "Not signed in: send `Authorization: Token <key>` or a session cookie.",
    403: "Not allowed (for a session cookie: the CSRF token is missing or wrong).",
    404: "No such object among yours (or no such page).",
    409: "The request conflicts with the object's current state.",
    415: "The body is not JSON (or a form).",
    429: "A limit was reached; try again later.",
}


class ErrorSerializer(serializers.Serializer[Any]):
    """Every error body: a machine-readable ``code`` and a sentence; validation errors
    (400 ``invalid``) add ``errors``, one per problem. (A serializer cannot declare a
    field named ``errors``: the hook writes the whole component, ``_error_component``.)"""

    code = serializers.CharField()
    detail = serializers.CharField()


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
    for name, component in schemas.items():
        if name.endswith("Request"):
            _describe_text_rules(component)
    for operation in _operations(result):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                _describe_text_rules(parameter.get("schema", {}), blank_ok=True)
        responses = operation.setdefault("responses", {})
        for status in _generic_statuses(operation):
            responses.setdefault(
                str(status),
                {"description": _DESCRIPTIONS[status], "content": _json(ERROR_REF)},
            )
    return result


def _describe_text_rules(schema: dict[str, Any], *, blank_ok: bool = False) -> None:
    """Add the NUL and blank rules to ``schema`` and the plain strings inside it."""
    if schema.get("type") == "string" and not {"pattern", "format", "enum"} & schema.keys():
        not_blank = not blank_ok and schema.get("minLength", 0) >= 1
        schema["pattern"] = NOT_BLANK if not_blank else NO_NUL
    for child in schema.get("properties", {}).values():
        _describe_text_rules(child)
    if isinstance(schema.get("items"), dict):
        _describe_text_rules(schema["items"])
    for key in ("oneOf", "anyOf", "allOf"):
        for child in schema.get(key, []):
            _describe_text_rules(child, blank_ok=blank_ok)


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
            "path": {"type": "string", "description": "Dotted path ('' for the whole body)."},
            "code": {"type": "string"},
            "detail": {"type": "string"},
        },
        "required": ["path", "code", "detail"],
        "additionalProperties": False,
    }
