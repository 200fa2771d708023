"""The admin of the approval audit trail: every decision, read-only (nobody adds,
changes or deletes one here), filtered by channel, verdict, tool and day."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from studio.models import ApprovalDecision

if TYPE_CHECKING:
    ApprovalDecisionAdminBase = admin.ModelAdmin[ApprovalDecision]
else:
    ApprovalDecisionAdminBase = admin.ModelAdmin


@admin.register(ApprovalDecision)
class ApprovalDecisionAdmin(ApprovalDecisionAdminBase):
    list_display = [
        "decided_at", "tool", "decision", "channel", "decided_by_name", "edited", "session",
    ]  # fmt: skip
    list_filter = ["channel", "decision", "tool", "decided_at"]
    search_fields = ["tool", "call_id", "decided_by_name", "reason", "session__title"]
    date_hierarchy = "decided_at"
    list_select_related = ["session"]

    @admin.display(boolean=True)
    def edited(self, row: ApprovalDecision) -> bool:
        return row.edited

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
