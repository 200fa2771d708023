"""The MCP tokens page: the tokens other MCP clients use to call the signed-in user's
published agents at ``/mcp`` (``studio.mcp_endpoint``); made and revoked as every kind
of token is (``studio.web.tokens``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from studio import services
from studio.models import McpToken
from studio.web import tokens


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def mcp_token_list(request: HttpRequest) -> HttpResponse:
    context = {
        "endpoint": request.build_absolute_uri("/mcp"),
        "agents": services.published_agents(request.user.pk),
        "section": "mcp",
    }
    return tokens.token_list(request, McpToken, "studio/mcp_token_list.html", context)


@login_required
@require_POST
def mcp_token_revoke(request: HttpRequest, pk: str) -> HttpResponse:
    return tokens.token_revoke(request, McpToken, pk, "mcp-tokens")
