"""The MCP tokens page: the tokens other MCP clients use to call the signed-in user's
published agents at ``/mcp`` (``studio.mcp_endpoint``). A new token is shown once, on
the answer to the POST that made it (never stored, never cached); revoking deletes it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from studio import services
from studio.errors import InvalidInputError
from studio.models import McpToken


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def mcp_token_list(request: HttpRequest) -> HttpResponse:
    created: str | None = None
    name = ""
    if request.method == "POST":
        name = request.POST.get("name", "")[:200]
        try:
            _, created = services.create_token(request.user, name)  # type: ignore[arg-type]
        except InvalidInputError as exc:
            messages.error(request, exc.problems[0].message)
        else:
            name = ""
    context = {
        "tokens": McpToken.objects.filter(owner_id=request.user.pk),
        "created": created,
        "name": name,
        "endpoint": request.build_absolute_uri("/mcp"),
        "agents": services.published_agents(request.user.pk),
        "section": "mcp",
    }
    return render(request, "studio/mcp_token_list.html", context)


@login_required
@require_POST
def mcp_token_revoke(request: HttpRequest, pk: str) -> HttpResponse:
    token = McpToken.objects.filter(owner_id=request.user.pk, pk=pk).first()
    if token is None:
        raise Http404("no such token")
    services.revoke_token(token)
    messages.success(request, f"Revoked token {token.name}.")
    return redirect("mcp-tokens")
