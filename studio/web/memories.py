"""The memories page: the signed-in user's memories, searched by word or agent, each
editable and deletable, each linking to the session that wrote it. Memory text is
shown as text."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from studio import memory, services
from studio.errors import InvalidInputError
from studio.models import Memory

MAX_SHOWN = 100


@login_required
@require_GET
def memory_list(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "")[:500]
    agent = request.GET.get("agent", "")[:64]
    found = memory.search(_owner_id(request), agent or None, query, MAX_SHOWN)
    agents = (
        Memory.objects.filter(owner_id=_owner_id(request))
        .order_by("agent")
        .values_list("agent", flat=True)
        .distinct()
    )
    context = {"memories": found, "q": query, "agent": agent, "agents": list(agents)}
    return render(request, "studio/memory_list.html", {**context, "section": "memories"})


@login_required
@require_POST
def memory_edit(request: HttpRequest, pk: int) -> HttpResponse:
    found = _found(request, pk)
    try:
        services.edit_memory(found, request.POST.get("text", ""))
    except InvalidInputError as exc:
        messages.error(request, exc.problems[0].message)
    else:
        messages.success(request, "Memory saved.")
    return redirect("memories")


@login_required
@require_POST
def memory_delete(request: HttpRequest, pk: int) -> HttpResponse:
    _found(request, pk).delete()
    messages.success(request, "Memory deleted.")
    return redirect("memories")


def _found(request: HttpRequest, pk: int) -> Memory:
    found = memory.owned(_owner_id(request)).filter(pk=pk).first()
    if found is None:
        raise Http404("no such memory")
    return found


def _owner_id(request: HttpRequest) -> int:
    return int(request.user.pk)  # type: ignore[arg-type]  # login_required: a real user
