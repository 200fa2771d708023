"""Importing a run bundle from the sessions page (``POST /sessions/import/``): the new
read-only session's timeline on success; back to the sessions with the refusal (its
path in the bundle and why) otherwise. Exporting is the session page's link to
``GET /api/sessions/<id>/bundle/``."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from studio import bundles, services
from studio.errors import InvalidInputError


@login_required
@require_POST
def bundle_import(request: HttpRequest) -> HttpResponse:
    upload = request.FILES.get("bundle")
    if upload is None:
        messages.error(request, "Import refused: choose a bundle file (.json or .studio-run.zip).")
        return redirect("sessions")
    owner = cast("AbstractBaseUser", request.user)  # login_required
    try:
        data = upload.read(bundles.MAX_BYTES + 1)
        session = services.import_bundle(owner, upload.name or "", data)
    except InvalidInputError as exc:
        problem = exc.problems[0]
        where = ".".join(str(part) for part in problem.path)
        at = f" (at {where})" if where else ""
        messages.error(request, f"Import refused: {problem.message}{at}")
        return redirect("sessions")
    messages.success(request, "Imported as a read-only session: replay its runs from here.")
    return redirect("session-timeline", session.pk)
