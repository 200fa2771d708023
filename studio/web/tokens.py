"""The pages of a kind of token (``studio.models.tokens``): the list with the form that
makes one, shown once on the answer to the POST that made it (never stored, never
cached), and revoking, which deletes it. The MCP and trace ingest pages are both this."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from studio.errors import InvalidInputError
from studio.models.tokens import AccessToken
from studio.services import tokens as token_service


def token_list[T: AccessToken](
    request: HttpRequest, kind: type[T], template: str, context: dict[str, Any]
) -> HttpResponse:
    created: str | None = None
    name = ""
    if request.method == "POST":
        name = request.POST.get("name", "")[:200]
        try:
            _, created = token_service.create_token(kind, request.user, name)  # type: ignore[arg-type]
        except InvalidInputError as exc:
            messages.error(request, exc.problems[0].message)
        else:
            name = ""
    rows = kind._default_manager.filter(owner_id=request.user.pk)
    page = {"tokens": rows, "created": created, "name": name, **context}
    return render(request, template, page)


def token_revoke[T: AccessToken](
    request: HttpRequest, kind: type[T], pk: str, back: str
) -> HttpResponse:
    token = kind._default_manager.filter(owner_id=request.user.pk, pk=pk).first()
    if token is None:
        raise Http404("no such token")
    token_service.revoke_token(token)
    messages.success(request, f"Revoked token {token.name}.")
    return redirect(back)
