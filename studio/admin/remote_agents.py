"""Remote A2A agents in the admin: read-mostly. Registering and changing one happens in
the app (``/remote-agents/``, the API), where the URL is checked and the card read;
here staff see them and may remove one that no agent lists. A superuser sees every
user's; other staff only their own. The token is never shown (its header's name is)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.safestring import SafeString

from studio.admin.site import pretty_json
from studio.models import RemoteAgent
from studio.services import remote_agents as rules

if TYPE_CHECKING:
    RemoteAgentAdminBase = admin.ModelAdmin[RemoteAgent]
else:
    RemoteAgentAdminBase = admin.ModelAdmin


@admin.register(RemoteAgent)
class RemoteAgentAdmin(RemoteAgentAdminBase):
    list_display = ["name", "owner", "url", "card_name", "card_fetched_at", "updated_at"]
    list_select_related = ["owner"]
    search_fields = ["name", "url", "owner__username"]
    SHOWN = (
        "owner",
        "name",
        "description",
        "url",
        "header_names",
        "pretty_card",
        "card_error",
        "card_fetched_at",
        "created_at",
        "updated_at",
    )
    fields = readonly_fields = SHOWN
    actions = None  # removing checks that no agent lists it, one at a time

    def get_queryset(self, request: HttpRequest) -> QuerySet[RemoteAgent]:
        rows = super().get_queryset(request)
        return rows if request.user.is_superuser else rows.filter(owner_id=request.user.pk)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: RemoteAgent | None = None) -> bool:
        """Not while the owner's agents list it (the page and the API say so)."""
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or not rules.users_of(obj))

    @admin.display(description="card")
    def card_name(self, remote: RemoteAgent) -> str:
        return str((remote.card or {}).get("name", ""))

    @admin.display(description="card")
    def pretty_card(self, remote: RemoteAgent) -> SafeString:
        return pretty_json(remote.card)
