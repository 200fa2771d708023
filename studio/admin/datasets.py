"""The admin of datasets, read-mostly: staff see every dataset with its versions (a
version is never edited, so they are read-only) and may describe or delete one (a
dataset an eval run pins cannot be deleted: the admin lists what protects it). Cases
are made by their owners, through the pages and the API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.safestring import SafeString

from studio.admin.site import ReadOnlyInline, pretty_json
from studio.models import Dataset, DatasetVersion

if TYPE_CHECKING:
    DatasetAdminBase = admin.ModelAdmin[Dataset]
    DatasetVersionAdminBase = admin.ModelAdmin[DatasetVersion]
else:
    DatasetAdminBase = DatasetVersionAdminBase = admin.ModelAdmin

SHOWN_NAMES = 20


class DatasetVersionInline(ReadOnlyInline):
    model = DatasetVersion
    readonly_fields = ("number", "note", "case_count", "case_names", "created_at")
    fields = readonly_fields
    ordering = ["-number"]
    show_change_link = True

    @admin.display(description="cases")
    def case_count(self, version: DatasetVersion) -> int:
        return len(version.cases)

    @admin.display(description="names")
    def case_names(self, version: DatasetVersion) -> str:
        names = [str(case.get("name", "")) for case in version.cases[:SHOWN_NAMES]]
        more = len(version.cases) - SHOWN_NAMES
        return ", ".join(names) + (f" and {more} more" if more > 0 else "")


@admin.register(Dataset)
class DatasetAdmin(DatasetAdminBase):
    list_display = ["name", "owner", "version_number", "case_count", "updated_at"]
    list_select_related = ["owner", "current_version"]
    search_fields = ["name", "description", "owner__username"]
    fields = ["owner", "name", "description", "version_number", "case_count", "updated_at"]
    readonly_fields = ["owner", "name", "version_number", "case_count", "updated_at"]
    inlines = [DatasetVersionInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # cases are validated by the service: create datasets in the app

    @admin.display(description="current version")
    def version_number(self, dataset: Dataset) -> int | None:
        return dataset.current_version.number if dataset.current_version else None

    @admin.display(description="cases")
    def case_count(self, dataset: Dataset) -> int:
        return len(dataset.current_version.cases) if dataset.current_version else 0


@admin.register(DatasetVersion)
class DatasetVersionAdmin(DatasetVersionAdminBase):
    list_display = ["__str__", "note", "created_at"]
    list_select_related = ["dataset"]
    search_fields = ["dataset__name", "dataset__owner__username", "note"]
    fields = ["dataset", "number", "note", "created_at", "pretty_cases"]
    readonly_fields = ["dataset", "number", "note", "created_at", "pretty_cases"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # versions go with their dataset

    @admin.display(description="cases")
    def pretty_cases(self, version: DatasetVersion) -> SafeString:
        return pretty_json(version.cases)
