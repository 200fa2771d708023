"""What a request gets when it goes wrong: a page of the app (its layout, the navigation
for a signed-in user, a way back) for 400, 403, 404 and 500, and under ``/api/`` the
API's own JSON error (``{"code", "detail"}``, as ``studio.api.exceptions`` writes it),
even for a URL no API view answers.

``studio.urls`` names these as Django's handlers. With ``STUDIO_DEBUG=1`` Django shows
its technical page for 404 and 500 instead; 400 and 403 use these in every
configuration. The 500 page renders without the request (no session, no database:
whatever failed may be the reason).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader
from django.urls import reverse
from django.views.decorators.csrf import requires_csrf_token
from rest_framework import exceptions

from studio.api.exceptions import error_body


@dataclass(frozen=True)
class Section:
    """A part of the app, named by the first folder of its URLs."""

    route: str
    label: str
    nav: str  # the navigation's ``section`` that marks it as current


SECTIONS = {
    "agents": Section("agents", "Agents", "agents"),
    "models": Section("models", "Models", "models"),
    "mcp-servers": Section("mcp-servers", "MCP servers", "mcp"),
    "playground": Section("playground", "the playground", "playground"),
    "sessions": Section("sessions", "Sessions", "sessions"),
}


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(reverse("api-index"))


def _page(request: HttpRequest, template: str, status: int, reason: str = "") -> HttpResponse:
    section = SECTIONS.get(request.path.strip("/").split("/")[0])
    context = {
        "reason": reason,
        "back": {"url": reverse(section.route), "label": section.label} if section else None,
        "section": section.nav if section else "",
    }
    return render(request, template, context, status=status)


@requires_csrf_token
def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body(exceptions.ParseError()), status=400)
    return _page(request, "400.html", 400)


@requires_csrf_token
def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    # The reason is a sentence Studio wrote (PermissionDenied("only staff can ...")).
    if _is_api(request):
        return JsonResponse(
            error_body(exceptions.PermissionDenied(str(exception) or None)), status=403
        )
    return _page(request, "403.html", 403, reason=str(exception))


@requires_csrf_token
def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body(exceptions.NotFound()), status=404)
    return _page(request, "404.html", 404)


@requires_csrf_token
def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse(error_body(exceptions.APIException()), status=500)
    return HttpResponseServerError(loader.get_template("500.html").render())
