"""The trace ingest page: the tokens OpenTelemetry exporters send traces with to
``/v1/traces`` (``studio.web.otlp``), made and revoked as every kind of token is
(``studio.web.tokens``), and the external agents that sent some."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from studio.models import ExternalAgent, IngestToken
from studio.web import tokens


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def ingest_token_list(request: HttpRequest) -> HttpResponse:
    agents = ExternalAgent.objects.filter(owner_id=request.user.pk).annotate(runs=Count("traces"))
    context = {
        "endpoint": request.build_absolute_uri("/v1/traces"),
        "agents": agents,
        "section": "sessions",  # reached from the sessions page: its runs show there
    }
    return tokens.token_list(request, IngestToken, "studio/ingest_token_list.html", context)


@login_required
@require_POST
def ingest_token_revoke(request: HttpRequest, pk: str) -> HttpResponse:
    return tokens.token_revoke(request, IngestToken, pk, "ingest-tokens")
