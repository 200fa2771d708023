"""``GET /metrics``: the Prometheus exposition of ``studio.metrics``, for staff signed
in, a staff user's API token, or the operator's scrape token (``STUDIO_METRICS_TOKEN``,
sent as ``Authorization: Bearer <token>``, which is how Prometheus scrapes)."""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from rest_framework.authtoken.models import Token

from studio.metrics import REGISTRY


def allowed(request: HttpRequest) -> bool | None:
    """Whether ``request`` may read the metrics: staff signed in, a staff user's API
    token, or the scrape token ``STUDIO_METRICS_TOKEN`` (``Authorization: Bearer``).
    ``None`` when it presented nothing (401), False when what it presented is refused."""
    user = request.user
    if user.is_authenticated:
        return bool(user.is_staff)
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if not key:
        return None
    scrape_token: str = settings.STUDIO_METRICS_TOKEN
    if scheme.lower() == "bearer" and scrape_token:
        return hmac.compare_digest(key.encode(), scrape_token.encode())
    if scheme.lower() == "token":
        token = Token.objects.select_related("user").filter(key=key).first()
        return token is not None and token.user.is_active and token.user.is_staff
    return False


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    verdict = allowed(request)
    if verdict is None:
        response = HttpResponse("sign in as staff or send the scrape token\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not verdict:
        return HttpResponse("staff or the scrape token only\n", status=403)
    return HttpResponse(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
