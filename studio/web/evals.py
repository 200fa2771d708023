"""The eval pages (issue 25): the user's eval runs, the form that starts one, an eval
run's live page and the comparison of two (``eval_run``, ``eval_compare``).

The "New eval" form offers the user's agent versions, dataset versions, model
configurations (a judge's model) and the evaluators there are (built in and registered
in code: ``studio.evals.catalogue``); the page's script sends it to the eval API, which
validates and starts it (``POST /api/evals/``, ``studio.evals.create_eval``), so a page
and a script start an eval the same way."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from studio.evals.catalogue import custom_evaluators
from studio.models import AgentVersion, ModelConfig
from studio.models.evals import MAX_CONCURRENCY, MAX_REPEATS, DatasetVersion, EvalRun
from studio.web import eval_data
from studio.web.owned import uuid_or_none

RUNS_PER_PAGE = 25
VERSIONS_OFFERED = 20
"""The newest versions of each agent and dataset the form offers."""


@login_required
@require_GET
def eval_list(request: HttpRequest) -> HttpResponse:
    runs = eval_data.owned_eval_runs(request)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    rows = [_row(run) for run in page.object_list]
    return render(
        request, "studio/eval_list.html", {"section": "evals", "page": page, "rows": rows}
    )


def _row(run: EvalRun) -> dict[str, Any]:
    figures = eval_data.summary(run)
    return {
        "run": run,
        "agent": eval_data.agent_at(run),
        "dataset": eval_data.dataset_at(run.dataset_version),
        "dataset_url": eval_data.dataset_url(run.dataset_version),
        "figures": figures,
        "pass_rate": eval_data.percent(figures.pass_rate),
    }


@login_required
@require_GET
def eval_new(request: HttpRequest) -> HttpResponse:
    agent_versions = _agent_versions(request)
    dataset_versions = _dataset_versions(request)
    picked_agent = uuid_or_none(request.GET.get("agent_version"))
    picked_dataset = uuid_or_none(request.GET.get("dataset_version"))
    context = {
        "section": "evals",
        "agent_versions": agent_versions,
        "dataset_versions": dataset_versions,
        "picked_agent": str(picked_agent or ""),
        "picked_dataset": str(picked_dataset or ""),
        "models": list(
            ModelConfig.objects.filter(owner_id=request.user.pk)
            .order_by("name")
            .values_list("name", flat=True)
        ),
        "custom": _custom_evaluators(),
        "max_concurrency": MAX_CONCURRENCY,
        "max_repeats": MAX_REPEATS,
    }
    return render(request, "studio/eval_new.html", context)


def _agent_versions(request: HttpRequest) -> list[tuple[str, list[AgentVersion]]]:
    """Each of the user's agents with its newest versions, newest first."""
    grouped: dict[str, list[AgentVersion]] = {}
    rows = AgentVersion.objects.filter(agent__owner_id=request.user.pk).select_related("agent")
    for version in rows.order_by("agent__name", "-number"):
        versions = grouped.setdefault(version.agent.name, [])
        if len(versions) < VERSIONS_OFFERED:
            versions.append(version)
    return list(grouped.items())


def _dataset_versions(request: HttpRequest) -> list[tuple[str, list[DatasetVersion]]]:
    grouped: dict[str, list[DatasetVersion]] = {}
    rows = DatasetVersion.objects.filter(dataset__owner_id=request.user.pk).select_related(
        "dataset"
    )
    for version in rows.defer("cases").order_by("dataset__name", "-number"):
        versions = grouped.setdefault(version.dataset.name, [])
        if len(versions) < VERSIONS_OFFERED:
            versions.append(version)
    return list(grouped.items())


def _custom_evaluators() -> list[dict[str, Any]]:
    """The evaluators registered in Python code (``agents_core.evals.registry``), each
    parameter's default as JSON, and as ``example`` the parameters that have one (what
    the form starts from)."""
    rows = custom_evaluators()
    for row in rows:
        params = row["params"] or []
        for param in params:
            param["default_json"] = json.dumps(param["default"])
        example = {param["name"]: param["default"] for param in params if not param["required"]}
        row["example"] = json.dumps(example)
    return rows
