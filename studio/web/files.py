"""Serves a file attached to a message to its owner: with the type its bytes were
sniffed to be, never sniffed again by the browser, never as a page."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from studio import files

INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""Shown in the page (as ``<img>``); anything else is downloaded."""


@login_required
@require_GET
def attached_file(request: HttpRequest, blob_id: str) -> HttpResponse:
    upload = files.owned(request.user, blob_id)  # type: ignore[arg-type]
    response = HttpResponse(files.read(upload.blob_id), content_type=upload.content_type)
    disposition = "inline" if upload.content_type in INLINE_TYPES else "attachment"
    suffix = upload.content_type.rsplit("/", 1)[-1].replace("plain", "txt")
    response["Content-Disposition"] = f'{disposition}; filename="{blob_id[:12]}.{suffix}"'
    response["X-Content-Type-Options"] = "nosniff"
    # Opened on its own, the file is a sandboxed document that may run nothing.
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=86400, immutable"
    return response
