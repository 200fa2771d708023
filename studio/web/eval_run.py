"""An eval run's page: its agent and dataset versions, its progress and summary, and a
row per case and repeat with each evaluator's verdict and a link to the case's session.

The rows reach the page as data (``json_script``) and its script writes them as text;
the eval's websocket (``/ws/evals/<id>/``) then sends a snapshot and each case result as
it changes, so a running eval fills in live."""

from __future__ import annotations

from uuid import UUID

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from studio import evals
from studio.api.eval_serializers import eval_payload, result_payloads
from studio.models.evals import ACTIVE_EVAL_STATUSES, EvalRun
from studio.web import eval_data


@login_required
@require_GET
def eval_run(request: HttpRequest, pk: UUID) -> HttpResponse:
    run = get_object_or_404(eval_data.owned_eval_runs(request), pk=pk)
    # Read now, not as stored: the page and its socket's first snapshot agree.
    run.summary = evals.summary_of(run)
    results = run.results.order_by("case_index", "repeat")
    previous = previous_run(run)
    data = {
        # The shapes of the API and of the eval's websocket frames.
        "run": eval_payload(run),
        "results": result_payloads(results),
        "cases": len(run.dataset_version.cases),
        "urls": {
            "socket": f"/ws/evals/{run.pk}/",
            "cancel": reverse("api-eval-cancel", args=[run.pk]),
            "session": reverse("sessions"),
        },
    }
    figures = eval_data.summary(run)
    return render(
        request,
        "studio/eval_run.html",
        {
            "section": "evals",
            "run": run,
            "agent": eval_data.agent_at(run),
            "dataset": eval_data.dataset_at(run.dataset_version),
            "dataset_url": eval_data.dataset_url(run.dataset_version),
            "active": run.status in ACTIVE_EVAL_STATUSES,
            "figures": figures,
            "pass_rate": eval_data.percent(figures.pass_rate),
            "pass_at_k": eval_data.percent(figures.pass_at_k),
            "previous": previous,
            "data": data,
        },
    )


def previous_run(run: EvalRun) -> EvalRun | None:
    """The owner's eval run of the same agent on the same dataset just before ``run``:
    what "compare with previous" compares it with."""
    return (
        EvalRun.objects.filter(
            owner_id=run.owner_id,
            agent_version__agent_id=run.agent_version.agent_id,
            dataset_version__dataset_id=run.dataset_version.dataset_id,
            created_at__lt=run.created_at,
        )
        .order_by("-created_at")
        .first()
    )
