"""The datasets pages: the signed-in user's datasets (create one, upload a JSONL, CSV or
ADK eval set file), one dataset's cases at a version (older versions read-only), a case
added or deleted (each a new version), the JSONL export; and, on a session's page, the
form that adds one of its turns to a dataset. Cases are shown as text, never markup."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from agents_core.evals import formats
from agents_core.evals.contracts import Case
from studio.errors import ConflictError, InvalidInputError
from studio.models import Dataset, Run, Session
from studio.services import dataset_cases, datasets
from studio.web.dataset_forms import AddTurnForm, CaseForm, DatasetForm, UploadForm
from studio.web.owned import owned_sessions, uuid_or_none


def owned_datasets(request: HttpRequest) -> QuerySet[Dataset]:
    return Dataset.objects.filter(owner_id=request.user.pk).select_related("current_version")


def _owner(request: HttpRequest) -> AbstractBaseUser:
    return request.user  # type: ignore[return-value]  # login_required: a real user


def _refusal(exc: InvalidInputError | ConflictError) -> str:
    return exc.message.removeprefix("file: ")


@login_required
@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    return _list_page(request, DatasetForm(), UploadForm())


def _list_page(
    request: HttpRequest, form: DatasetForm, upload: UploadForm, status: int = 200
) -> HttpResponse:
    rows = [
        (d, len(d.current_version.cases) if d.current_version else 0)
        for d in owned_datasets(request).order_by("-updated_at")
    ]
    context = {
        "section": "datasets",
        "rows": rows,
        "form": form,
        "upload": upload,
        "max_bytes": formats.MAX_FILE_BYTES,
        "max_cases": f"{formats.MAX_CASES:,}",
    }
    return render(request, "studio/dataset_list.html", context, status=status)


@login_required
@require_POST
def dataset_create(request: HttpRequest) -> HttpResponse:
    form = DatasetForm(request.POST)
    if form.is_valid():
        try:
            made = datasets.create_dataset(_owner(request), **form.cleaned_data)
        except InvalidInputError as exc:
            form.add_error("name", exc.problems[0].message)
        else:
            messages.success(request, f"Created dataset {made.name}.")
            return redirect("dataset", made.pk)
    return _list_page(request, form, UploadForm(), status=400)


@login_required
@require_POST
def dataset_import(request: HttpRequest) -> HttpResponse:
    upload = UploadForm(request.POST, request.FILES)
    if upload.is_valid():
        file = upload.cleaned_data["file"]
        try:
            imported = datasets.import_file(
                _owner(request),
                file.read(),
                filename=file.name or "",
                fmt=upload.cleaned_data["format"] or None,
                name=upload.cleaned_data["name"] or None,
            )
        except (InvalidInputError, ConflictError) as exc:
            upload.add_error("file", _refusal(exc))
        else:
            what = "new dataset" if imported.created else f"version {imported.version.number} of"
            count = len(imported.version.cases)
            messages.success(
                request,
                f"Imported {count} case{'s' * (count != 1)} as {what} "
                f"{imported.dataset.name} ({imported.format}).",
            )
            return redirect("dataset", imported.dataset.pk)
    return _list_page(request, DatasetForm(), upload, status=400)


@login_required
@require_GET
def dataset_detail(request: HttpRequest, pk: UUID) -> HttpResponse:
    return _detail_page(request, get_object_or_404(owned_datasets(request), pk=pk), CaseForm())


def _detail_page(
    request: HttpRequest, dataset: Dataset, form: CaseForm, status: int = 200
) -> HttpResponse:
    versions = list(dataset.versions.order_by("-number"))
    wanted = request.GET.get("version", "")
    shown = next((v for v in versions if str(v.number) == wanted), dataset.current_version)
    latest = shown is None or shown.pk == dataset.current_version_id
    context = {
        "section": "datasets",
        "dataset": dataset,
        "versions": versions,
        "shown": shown,
        "latest": latest,
        "cases": [case_row(case) for case in datasets.version_cases(shown)],
        "form": form,
        "highlight": request.GET.get("case", ""),
    }
    return render(request, "studio/dataset_detail.html", context, status=status)


def case_row(case: Case) -> dict[str, Any]:
    """What the cases table shows of a case."""
    calls = case.expect.tool_calls
    return {
        "name": case.name,
        "turns": case.input.turns,
        "state": _json(case.input.state) if case.input.state else "",
        "final_output": case.expect.final_output,
        "tool_calls": None if calls is None else [(c.name, _json(c.args)) for c in calls],
        "tags": case.tags,
    }


def _json(value: Any) -> str:
    """JSON as the API writes it, shown as text."""
    return json.dumps(value, ensure_ascii=False)


@login_required
@require_POST
def case_add(request: HttpRequest, pk: UUID) -> HttpResponse:
    dataset = get_object_or_404(owned_datasets(request), pk=pk)
    form = CaseForm(request.POST)
    if form.is_valid():
        try:
            version = datasets.add_case(dataset, form.case())
        except (InvalidInputError, ConflictError) as exc:
            form.add_error(None, exc.message)
        else:
            name = form.cleaned_data["name"]
            messages.success(request, f"Added case {name} (v{version.number}).")
            return redirect(_case_url(dataset.pk, name))
    return _detail_page(request, dataset, form, status=400)


@login_required
@require_POST
def case_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    dataset = get_object_or_404(owned_datasets(request), pk=pk)
    name = request.POST.get("name", "")
    try:
        version = datasets.remove_case(dataset, name)
    except InvalidInputError as exc:
        messages.error(request, exc.message.removeprefix("name: "))
    else:
        messages.success(request, f"Deleted case {name} (v{version.number}).")
    return redirect("dataset", dataset.pk)


@login_required
@require_POST
def dataset_delete(request: HttpRequest, pk: UUID) -> HttpResponse:
    dataset = get_object_or_404(owned_datasets(request), pk=pk)
    try:
        datasets.delete_dataset(dataset)
    except ConflictError as exc:
        messages.error(request, exc.message)
        return redirect("dataset", dataset.pk)
    messages.success(request, f"Deleted dataset {dataset.name}.")
    return redirect("datasets")


def _case_url(dataset_id: UUID, name: str) -> str:
    return f"{reverse('dataset', args=[dataset_id])}?{urlencode({'case': name})}#cases"


# The session page's "Add this turn to a dataset"


ENDED_RUNS = 50
"""The newest ended runs whose turn may be added to a dataset."""


def ended_runs(session: Session) -> list[Run]:
    ended = Run.objects.filter(session=session, ended_at__isnull=False)
    return list(ended.order_by("-created_at")[:ENDED_RUNS])


def turn_panel(
    request: HttpRequest, session: Session, ended: list[Run] | None = None
) -> dict[str, Any]:
    """What the session page's "Add this turn to a dataset" card shows: the session's
    ended runs, the user's datasets, and the case just added (``?added=``). ``ended``:
    the session's ended runs newest first, when the page read them already."""
    runs = ended_runs(session) if ended is None else ended[:ENDED_RUNS]
    added = _added_case(request)
    initial = {"dataset": added["dataset"].name} if added else {}
    return {
        "turn_form": AddTurnForm(runs=runs, initial=initial),
        "dataset_names": list(owned_datasets(request).values_list("name", flat=True)),
        "has_ended_runs": bool(runs),
        "added_case": added,
    }


def _added_case(request: HttpRequest) -> dict[str, Any] | None:
    """The case named by ``?dataset=<id>&added=<name>``, if it is one of the user's."""
    dataset_id, name = request.GET.get("dataset", ""), request.GET.get("added", "")
    if not (dataset_id and name):
        return None
    wanted = uuid_or_none(dataset_id)
    dataset = owned_datasets(request).filter(pk=wanted).first() if wanted else None
    if dataset is None:
        return None
    found = next((c for c in datasets.current_cases(dataset) if c.name == name), None)
    if found is None:
        return None
    return {"dataset": dataset, "case": case_row(found), "url": _case_url(dataset.pk, name)}


@login_required
@require_GET
def session_turn_card(request: HttpRequest, pk: UUID) -> HttpResponse:
    """The session page's "Add a turn to a dataset" card alone: the page swaps it in
    when a run ends there, so that its turn can be added at once."""
    session = get_object_or_404(owned_sessions(request), pk=pk)
    context = {"session": session, **turn_panel(request, session)}
    return render(request, "studio/_dataset_turn.html", context)


@login_required
@require_POST
def session_add_turn(request: HttpRequest, pk: UUID) -> HttpResponse:
    session = get_object_or_404(owned_sessions(request), pk=pk)
    form = AddTurnForm(request.POST, runs=ended_runs(session))
    back = reverse("session-timeline", args=[session.pk])
    if not form.is_valid():
        first = next(iter(form.errors.values()))[0]
        messages.error(request, f"Not added: {first}")
        return redirect(back)
    try:
        added = dataset_cases.add_turn_to_dataset(
            _owner(request),
            session,
            dataset=form.cleaned_data["dataset"],
            run=form.cleaned_data["run"],
            name=form.cleaned_data["name"] or None,
        )
    except (InvalidInputError, ConflictError) as exc:
        messages.error(request, f"Not added: {exc.message}")
        return redirect(back)
    messages.success(
        request, f"Added case {added.case.name} to {added.dataset.name} (v{added.version.number})."
    )
    query = urlencode({"dataset": str(added.dataset.pk), "added": added.case.name})
    return redirect(f"{back}?{query}#add-to-dataset")
