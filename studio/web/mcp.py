"""The MCP servers page: the signed-in user's servers, registering and changing an
``http`` one, deleting, and testing a connection.

The form applies ``studio.mcp.checks`` like the API (``studio.web.forms.HttpMcpServerForm``).
A ``stdio`` server runs a program on Studio's host, so only staff create or change one,
in the admin; everyone else sees it read-only, with its exact command line as text, and
gets 403 from its create and edit URLs. Header values are write-only: pages show only
their names.
"""

from __future__ import annotations

from collections import defaultdict
from uuid import UUID

from asgiref.sync import async_to_sync
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from agents_core import builder as core_builder
from studio.agents import specs as agent_specs
from studio.mcp import checks as mcp_checks
from studio.mcp import client as mcp
from studio.models import McpServer
from studio.web.forms import HttpMcpServerForm


def _owned(request: HttpRequest) -> QuerySet[McpServer]:
    return McpServer.objects.filter(owner_id=request.user.pk)


def _owner(request: HttpRequest) -> AbstractBaseUser:
    return request.user  # type: ignore[return-value]  # login_required: a real user


def _users_by_server(owner: AbstractBaseUser) -> dict[str, list[str]]:
    """Which of the owner's agents name each server (one read of their current specs)."""
    users: dict[str, list[str]] = defaultdict(list)
    for agent, spec in sorted(agent_specs.owner_agent_specs(owner).items()):
        for server in core_builder.mcp_server_names(spec):
            users[server].append(agent)
    return users


@login_required
@require_GET
def mcp_list(request: HttpRequest) -> HttpResponse:
    users = _users_by_server(_owner(request))
    servers = [(server, users.get(server.name, [])) for server in _owned(request)]
    return render(
        request,
        "studio/mcp_list.html",
        {"section": "mcp", "servers": servers, "may_stdio": _may_stdio(request)},
    )


@login_required
@require_http_methods(["GET", "POST"])
def mcp_edit(request: HttpRequest, pk: UUID | None = None) -> HttpResponse:
    server = get_object_or_404(_owned(request), pk=pk) if pk else None
    if server is not None and server.transport == McpServer.Transport.STDIO:
        _require_stdio(request)
        return redirect("admin:studio_mcpserver_change", server.pk)
    data = request.POST if request.method == "POST" else None
    form = HttpMcpServerForm(data, owner=_owner(request), instance=server)
    if form.is_valid() and (saved := form.save()) is not None:
        verb = "Saved" if server else "Registered"
        messages.success(request, f"{verb} MCP server {saved.name}.")
        return redirect("mcp-servers")
    return render(
        request,
        "studio/mcp_edit.html",
        {"section": "mcp", "server": server, "form": form},
        status=400 if form.is_bound else 200,
    )


@login_required
@require_GET
def mcp_new_stdio(request: HttpRequest) -> HttpResponse:
    """Staff register stdio servers in the admin; everyone else may not (403)."""
    _require_stdio(request)
    return redirect("admin:studio_mcpserver_add")


@login_required
@require_POST
def mcp_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    # Deleting never grants anything, so owners may remove even a stdio server (as the API).
    server = get_object_or_404(_owned(request), pk=pk)
    if users := agent_specs.agents_using_mcp_server(_owner(request), server.name):
        messages.error(
            request,
            f"MCP server {server.name} is used by: {', '.join(users)}. Change those agents first.",
        )
    else:
        server.delete()
        messages.success(request, f"Deleted MCP server {server.name}.")
    return redirect("mcp-servers")


@login_required
@require_POST
def mcp_test(request: HttpRequest, pk: UUID) -> HttpResponse:
    """Connect, list the tools and disconnect; the result is shown as text."""
    server = get_object_or_404(_owned(request), pk=pk)
    check = async_to_sync(mcp.check_connection)(server)
    return render(
        request,
        "studio/mcp_test.html",
        {"section": "mcp", "server": server, "check": check, "may_stdio": _may_stdio(request)},
    )


def _may_stdio(request: HttpRequest) -> bool:
    return mcp_checks.may_manage(request.user, McpServer.Transport.STDIO)


def _require_stdio(request: HttpRequest) -> None:
    if not _may_stdio(request):
        raise PermissionDenied(mcp_checks.STDIO_STAFF_ONLY)
