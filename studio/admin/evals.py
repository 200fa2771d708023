"""Eval runs and their case results in the admin: read-only (an eval moves on only
through ``studio.evals``; nobody edits a verdict here). Staff only, like the whole
admin; a case result links to its session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest

from studio.models.evals import EvalCaseResult, EvalRun

if TYPE_CHECKING:
    EvalRunAdminBase = admin.ModelAdmin[EvalRun]
    EvalCaseResultAdminBase = admin.ModelAdmin[EvalCaseResult]
    ResultInlineBase = admin.TabularInline[EvalCaseResult, EvalRun]
else:
    EvalRunAdminBase = EvalCaseResultAdminBase = admin.ModelAdmin
    ResultInlineBase = admin.TabularInline


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


RESULT_FIELDS = (
    "case_index",
    "case_name",
    "repeat",
    "status",
    "score",
    "cost",
    "latency_s",
    "session",
)


class ResultInline(ReadOnly, ResultInlineBase):
    model = EvalCaseResult
    fields = list(RESULT_FIELDS)
    readonly_fields = list(RESULT_FIELDS)
    extra = 0
    show_change_link = True


@admin.register(EvalRun)
class EvalRunAdmin(ReadOnly, EvalRunAdminBase):
    list_display = [
        "__str__", "owner", "status", "pass_rate", "concurrency", "repeats", "created_at",
    ]  # fmt: skip
    list_filter = ["status", "created_at"]
    search_fields = [
        "owner__username",
        "agent_version__agent__name",
        "dataset_version__dataset__name",
    ]
    list_select_related = ["owner", "agent_version__agent", "dataset_version__dataset"]
    date_hierarchy = "created_at"
    inlines = [ResultInline]

    @admin.display(description="pass rate")
    def pass_rate(self, row: EvalRun) -> str:
        rate = (row.summary or {}).get("pass_rate")
        return "-" if rate is None else f"{rate:.0%}"


@admin.register(EvalCaseResult)
class EvalCaseResultAdmin(ReadOnly, EvalCaseResultAdminBase):
    list_display = ["__str__", "eval_run", "status", "score", "spent", "latency_s", "session"]
    list_filter = ["status"]
    search_fields = ["case_name", "eval_run__owner__username"]
    list_select_related = [
        "eval_run__agent_version__agent",
        "eval_run__dataset_version__dataset",
        "session",
    ]

    @admin.display(description="cost", ordering="cost")
    def spent(self, row: EvalCaseResult) -> str:  # "0.000152", not "0.0001520000"
        return "—" if row.cost is None else f"{row.cost.normalize():f}"
