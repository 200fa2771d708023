"""The remote agents page: the signed-in user's remote A2A agents (``RemoteAgent``),
registering and changing one, fetching its card again (the test), and removing it.

The URL goes through the outbound address checks when saved and each time the card is
fetched (``studio.a2a.cards``); the token is write-only. The card's text (name,
description, skills) comes from elsewhere: templates show it as text, never markup.
"""

from __future__ import annotations

from collections import defaultdict
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studio.agents import specs as agent_specs
from studio.errors import ConflictError
from studio.models import RemoteAgent
from studio.services import remote_agents as rules
from studio.web.remote_agent_forms import RemoteAgentForm

SECTION = "mcp"  # the nav's MCP servers link leads here (a button on that page)


def _owned(request: HttpRequest) -> QuerySet[RemoteAgent]:
    return RemoteAgent.objects.filter(owner_id=request.user.pk)


def _owner(request: HttpRequest) -> AbstractBaseUser:
    return request.user  # type: ignore[return-value]  # login_required: a real user


@login_required
@require_GET
def remote_agent_list(request: HttpRequest) -> HttpResponse:
    specs = agent_specs.owner_agent_specs(_owner(request))
    users: dict[str, list[str]] = defaultdict(list)
    for agent in sorted(specs):
        for remote in agent_specs.remote_agent_names(specs[agent]):
            users[remote].append(agent)
    remotes = [(remote, users.get(remote.name, [])) for remote in _owned(request)]
    return render(
        request, "studio/remote_agent_list.html", {"section": SECTION, "remotes": remotes}
    )


@login_required
@require_http_methods(["GET", "POST"])
def remote_agent_edit(request: HttpRequest, pk: UUID | None = None) -> HttpResponse:
    remote = get_object_or_404(_owned(request), pk=pk) if pk else None
    data = request.POST if request.method == "POST" else None
    form = RemoteAgentForm(data, owner=_owner(request), instance=remote)
    if form.is_valid():
        saved = rules.refresh_card(form.save())
        verb = "Saved" if remote else "Registered"
        messages.success(request, f"{verb} remote agent {saved.name}.")
        if saved.card_error:
            messages.warning(request, f"Its card could not be read: {saved.card_error}")
        return redirect("remote-agents")
    return render(
        request,
        "studio/remote_agent_edit.html",
        {"section": SECTION, "remote": remote, "form": form},
        status=400 if form.is_bound else 200,
    )


@login_required
@require_POST
def remote_agent_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    remote = get_object_or_404(_owned(request), pk=pk)
    try:
        rules.delete_remote_agent(remote)
    except ConflictError as exc:
        messages.error(request, f"Could not remove it: {exc.message}.")
    else:
        messages.success(request, f"Removed remote agent {remote.name}.")
    return redirect("remote-agents")


@login_required
@require_POST
def remote_agent_test(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Fetch the agent's card again: what it says now, or why it could not be read."""
    remote = rules.refresh_card(get_object_or_404(_owned(request), pk=pk))
    if remote.card_error:
        messages.error(request, f"{remote.name}: {remote.card_error}")
    else:
        messages.success(request, f"{remote.name}: its card was read and is shown below.")
    return redirect("remote-agents")
