"""The admin of sessions (events read-only, paged), with JSON export, and of runs,
with cancel, pause, resume and resume-from-last-step actions that go through
``services``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from pydantic import ValidationError

from studio import event_lines, figures, services
from studio.admin.site import ReadOnlyInline, pretty_json
from studio.errors import ConflictError, LimitError
from studio.models import Event, Run, Session

# Django's admin and form classes are generic only in django-stubs, not at runtime.
if TYPE_CHECKING:
    SessionAdminBase = admin.ModelAdmin[Session]
    RunAdminBase = admin.ModelAdmin[Run]
    InlineFormSetBase = BaseInlineFormSet[Any, Any, Any]
else:
    SessionAdminBase = RunAdminBase = admin.ModelAdmin
    InlineFormSetBase = BaseInlineFormSet


class PaginatedInlineFormSet(InlineFormSetBase):
    """Shows one page of the related rows; the page comes from ``?<page_param>=``."""

    per_page = 50
    page_param = "page"
    requested_page: str | None = None
    page: Page[Any]

    def get_queryset(self) -> Any:
        if not hasattr(self, "_page_rows"):
            ordered = super().get_queryset()
            self.page = Paginator(ordered, self.per_page).get_page(self.requested_page)
            self._page_rows = list(self.page.object_list)
        return self._page_rows


class EventInline(ReadOnlyInline):
    model = Event
    formset = PaginatedInlineFormSet
    template = "admin/studio/session/events_inline.html"
    readonly_fields = ("seq", "type", "author", "branch", "said_or_did", "created_at")
    fields = readonly_fields
    ordering = ["seq"]
    page_param = "events_page"

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        formset = super().get_formset(request, obj, **kwargs)
        page = request.GET.get(self.page_param)
        return type(
            formset.__name__, (formset,), {"requested_page": page, "page_param": self.page_param}
        )

    @admin.display(description="said or did")
    def said_or_did(self, event: Event) -> str:
        """Its text, the tools it called and their results, its error (plain text: the
        admin escapes it); its text alone if its stored payload no longer reads (the
        admin is where staff look at such a row)."""
        try:
            line = event_lines.summary(event.to_core())
        except ValidationError:
            line = event.text
        return line if len(line) <= 200 else f"{line[:199]}…"


@admin.register(Session)
class SessionAdmin(SessionAdminBase):
    list_display = ["__str__", "owner", "agent", "status", "last_seq", "spent", "created_at"]
    list_filter = ["status", "created_at"]
    list_select_related = ["owner", "agent_version__agent", "ingested__agent"]
    search_fields = ["title", "key", "owner__username"]
    readonly_fields = [
        "owner",
        "agent",
        "status",
        "spent",
        "key",
        "last_seq",
        "created_at",
        "updated_at",
        "pretty_state",
        "export_link",
    ]
    fields = ["title", *readonly_fields]
    inlines = [EventInline]
    actions = ["export_as_json"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def get_urls(self) -> list[URLPattern]:
        export = self.admin_site.admin_view(self.export_view)
        return [
            path("<uuid:pk>/export/", export, name="studio_session_export"),
            *super().get_urls(),
        ]

    @admin.display(description="agent")
    def agent(self, session: Session) -> str:
        """Its agent version, or for a trace ingested over OTLP the agent that ran it
        elsewhere (marked so, as the sessions page marks it)."""
        if session.agent_version is not None:
            return str(session.agent_version)
        try:
            return f"{session.ingested.agent.name} (external)"
        except ObjectDoesNotExist:
            return "—"

    @admin.display(description="cost", ordering="cost")
    def spent(self, session: Session) -> str:  # not "cost": Django would show the field
        complete = session.cost_complete
        return figures.cost(session.cost, session.cost_currency, complete=complete) or "—"

    @admin.display(description="state")
    def pretty_state(self, session: Session) -> SafeString:
        return pretty_json(session.state)

    @admin.display(description="export")
    def export_link(self, session: Session) -> SafeString:
        url = reverse("admin:studio_session_export", args=[session.pk])
        return format_html('<a href="{}">Download as JSON</a>', url)

    def export_view(self, request: HttpRequest, pk: str) -> HttpResponse:
        session = get_object_or_404(Session, pk=pk)
        if not self.has_view_permission(request, session):
            return HttpResponse(status=403)
        return _download(services.export_session(session), f"session-{session.pk}.json")

    @admin.action(description="Export selected sessions as JSON")
    def export_as_json(self, request: HttpRequest, queryset: QuerySet[Session]) -> HttpResponse:
        exported = [services.export_session(session) for session in queryset]
        return _download({"sessions": exported}, "sessions.json")


def _download(document: dict[str, Any], filename: str) -> JsonResponse:
    response = JsonResponse(document, json_dumps_params={"indent": 2, "ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


SESSION_TITLE_CHARS = 32
"""How much of a session's title the run list shows, so its columns fit 1280 px."""


@admin.register(Run)
class RunAdmin(RunAdminBase):
    # Narrow columns: the list fits its box beside the admin's navigation and filters.
    list_display = [
        "short_id",
        "session_title",
        "status",
        "created_at",
        "duration",
        "tokens",
        "spent",
    ]
    list_filter = ["status", "created_at"]
    list_select_related = ["session"]
    search_fields = ["id", "invocation_id", "message", "session__title"]
    actions = ["cancel_runs", "pause_runs", "resume_runs", "resume_from_last_step"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [field.name for field in Run._meta.fields]

    @admin.display(description="run", ordering="id")
    def short_id(self, run: Run) -> str:
        return str(run.id)[:8]

    @admin.display(description="duration")
    def duration(self, run: Run) -> str:
        if run.ended_at is None:
            return "—"
        return figures.duration(run.ended_at - (run.started_at or run.created_at))

    @admin.display(description="session", ordering="session__title")
    def session_title(self, run: Run) -> str:
        """The session's title, clipped: a turn's first words can be long."""
        title = str(run.session)
        return (
            title if len(title) <= SESSION_TITLE_CHARS else f"{title[: SESSION_TITLE_CHARS - 1]}…"
        )

    @admin.display(description="tokens")
    def tokens(self, run: Run) -> str:
        # The pages' vocabulary and format: "1,204 in · 88 out".
        counts = {"input": run.input_tokens, "output": run.output_tokens}
        return figures.tokens(counts) or "—"

    @admin.display(description="cost", ordering="cost")
    def spent(self, run: Run) -> str:  # not "cost": Django would show the field itself
        return figures.cost(run.cost, run.cost_currency, complete=run.cost_complete) or "—"

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("studio.change_run")

    @admin.action(description="Cancel selected runs", permissions=["cancel"])
    def cancel_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        done = _each(queryset, services.cancel_run)
        skipped = len(queryset) - done
        self._report(request, done, f"Cancelled {done} run(s); {skipped} had already finished.")

    @admin.action(description="Pause selected runs", permissions=["cancel"])
    def pause_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        done = _each(queryset, services.pause_run)
        skipped = len(queryset) - done
        self._report(request, done, f"Paused {done} run(s); {skipped} were not running.")

    @admin.action(description="Resume selected runs", permissions=["cancel"])
    def resume_runs(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        done = _each(queryset, services.resume_run)
        skipped = len(queryset) - done
        self._report(request, done, f"Resumed {done} run(s); {skipped} were not paused.")

    @admin.action(description="Resume from last step", permissions=["cancel"])
    def resume_from_last_step(self, request: HttpRequest, queryset: QuerySet[Run]) -> None:
        done = _each(queryset, services.resume_interrupted_run)
        skipped = len(queryset) - done
        self._report(
            request,
            done,
            f"Resumed {done} interrupted run(s) from their last step; {skipped} could not be "
            "(not interrupted, not their session's latest run, or over the run limit).",
        )

    def _report(self, request: HttpRequest, done: int, text: str) -> None:
        self.message_user(request, text, messages.SUCCESS if done else messages.WARNING)


def _each(queryset: QuerySet[Run], change: Callable[[Run], Run]) -> int:
    """Apply ``change`` (a service) to each run; how many it applied to (the others
    were refused with a conflict or a limit: finished, not running, not paused, not
    interrupted, over the run cap)."""
    done = 0
    for run in queryset:
        try:
            change(run)
        except (ConflictError, LimitError):
            continue
        done += 1
    return done
