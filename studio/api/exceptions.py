"""Every API error as ``{"code", "detail"}``; validation errors add ``errors``, one per
problem, each with the dotted ``path`` of the field (inside a spec: the path in the spec).

    {"code": "invalid", "detail": "spec.sub_agents.0.model: unknown model 'gpt'",
     "errors": [{"path": "spec.sub_agents.0.model", "code": "spec_error",
                 "detail": "unknown model 'gpt'"}]}
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from studio.errors import ConflictError, InvalidInputError, LimitError, Path


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state of the object."
    default_code = "conflict"


class TooMany(exceptions.APIException):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "A limit was reached; try again once something finishes."
    default_code = "limit_reached"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    exc = _translate(exc)
    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, exceptions.APIException):
        return response
    response.data = error_body(exc)
    return response


def _translate(exc: Exception) -> Exception:
    match exc:
        case InvalidInputError():
            return exceptions.ValidationError({exc.field: problems_detail(exc)})
        case ConflictError():
            return Conflict(exc.message, code=exc.code)
        case LimitError():
            return TooMany(exc.message, code=exc.code)
        case DjangoValidationError():
            return exceptions.ValidationError(as_serializer_error(exc))
        case Http404():
            return exceptions.NotFound()
        case DjangoPermissionDenied():
            return exceptions.PermissionDenied()
    return exc


def problems_detail(exc: InvalidInputError) -> dict[str, list[exceptions.ErrorDetail]]:
    """Problems as a DRF error dict keyed by their dotted path (``""`` for the root),
    for raising from a serializer's ``validate_<field>``."""
    detail: dict[str, list[exceptions.ErrorDetail]] = {}
    for problem in exc.problems:
        key = ".".join(str(part) for part in problem.path)
        detail.setdefault(key, []).append(exceptions.ErrorDetail(problem.message, problem.code))
    return detail


def error_body(exc: exceptions.APIException) -> dict[str, Any]:
    if isinstance(exc, exceptions.ValidationError):
        errors = [
            {"path": ".".join(str(p) for p in path), "code": item.code, "detail": str(item)}
            for path, item in _flatten(exc.detail, ())
        ]
        first = errors[0] if errors else {"path": "", "detail": "Invalid input."}
        summary = f"{first['path']}: {first['detail']}" if first["path"] else first["detail"]
        return {"code": "invalid", "detail": summary, "errors": errors}
    detail = exc.detail
    code = getattr(detail, "code", None) or exc.default_code
    return {"code": code, "detail": str(detail)}


def _flatten(detail: Any, path: Path) -> Iterator[tuple[Path, exceptions.ErrorDetail]]:
    if isinstance(detail, dict):
        for key, value in detail.items():
            skip = key in ("", api_settings.NON_FIELD_ERRORS_KEY)
            yield from _flatten(value, path if skip else (*path, *str(key).split(".")))
    elif isinstance(detail, list):
        nested = any(isinstance(item, dict | list) for item in detail)
        for index, item in enumerate(detail):
            yield from _flatten(item, (*path, index) if nested else path)
    else:
        yield path, detail
