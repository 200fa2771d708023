"""The MCP tokens page: the tokens other MCP clients use to call the signed-in user's
published agents at ``/mcp`` (``studio.mcp_endpoint``); made and revoked as every kind
of token is (``studio.web.tokens``).

The same tokens sign A2A clients in to the agents the user publishes over A2A
(``studio.a2a_endpoint``): the page lists the agents with a saved version, each with a
button to publish or withdraw it there and, once published, its agent card's URL."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from studio import services
from studio.models import Agent, McpToken
from studio.services import a2a_serving
from studio.web import tokens


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def mcp_token_list(request: HttpRequest) -> HttpResponse:
    context = {
        "endpoint": request.build_absolute_uri("/mcp"),
        "agents": services.published_agents(request.user.pk),
        "a2a_agents": [(agent, _card_url(request, agent)) for agent in _a2a_candidates(request)],
        "section": "mcp",
    }
    return tokens.token_list(request, McpToken, "studio/mcp_token_list.html", context)


@login_required
@require_POST
def mcp_token_revoke(request: HttpRequest, pk: str) -> HttpResponse:
    return tokens.token_revoke(request, McpToken, pk, "mcp-tokens")


@login_required
@require_POST
def a2a_publish(request: HttpRequest, pk: str) -> HttpResponse:
    """Publish the user's agent ``pk`` over A2A (``published=1``) or withdraw it."""
    agent = Agent.objects.filter(owner_id=request.user.pk, pk=pk).first()
    if agent is None or agent.current_version_id is None:
        raise Http404("no such agent")
    published = request.POST.get("published") == "1"
    a2a_serving.set_a2a_published(agent, published)
    if published:
        messages.success(request, f"Published {agent.name} over A2A.")
    else:
        messages.success(request, f"Withdrew {agent.name} from A2A.")
    return redirect("mcp-tokens")


def _a2a_candidates(request: HttpRequest) -> list[Agent]:
    return list(
        Agent.objects.filter(owner_id=request.user.pk, current_version__isnull=False).order_by(
            "name"
        )
    )


def _card_url(request: HttpRequest, agent: Agent) -> str:
    return request.build_absolute_uri(f"/a2a/{agent.pk}/.well-known/agent-card.json")
