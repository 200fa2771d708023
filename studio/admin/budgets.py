"""The admin of budgets: staff set each user's daily budget; the days' spend is
read-only (runs write it, reserving before each model call)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from studio import costs, figures
from studio.models import DaySpend, UserBudget

if TYPE_CHECKING:
    UserBudgetAdminBase = admin.ModelAdmin[UserBudget]
    DaySpendAdminBase = admin.ModelAdmin[DaySpend]
else:
    UserBudgetAdminBase = DaySpendAdminBase = admin.ModelAdmin


@admin.register(UserBudget)
class UserBudgetAdmin(UserBudgetAdminBase):
    list_display = ["user", "day_cost", "day_tokens", "updated_at"]
    list_select_related = ["user"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]


@admin.register(DaySpend)
class DaySpendAdmin(DaySpendAdminBase):
    list_display = ["scope", "day", "spent", "reserved", "tokens_spent", "tokens_reserved"]
    list_filter = ["day"]
    search_fields = ["scope"]

    @admin.display(description="cost spent", ordering="cost_spent")
    def spent(self, row: DaySpend) -> str:  # "$0.00025", not the column's "0.0002480000"
        return figures.cost(row.cost_spent, costs.DEFAULT_CURRENCY)

    @admin.display(description="cost reserved", ordering="cost_reserved")
    def reserved(self, row: DaySpend) -> str:
        return figures.cost(row.cost_reserved, costs.DEFAULT_CURRENCY)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
