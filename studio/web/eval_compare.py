"""Two eval runs compared case by case (``studio.evals.compare``): regressions first (a
case that passed before and fails now, or passes in fewer of its repeats), then
improvements, then the cases alike, then those only one run had; each case links both
runs' sessions and, where both ran, the step-by-step diff of their runs
(``/compare/?a=&b=``). Below, the pass rate, cost and latency of every eval of the
agent on the dataset over time (``studio.evals.history``), drawn by uPlot.

``/evals/compare/?a=<eval>&b=<eval>``: with one or none given the page asks for the
other; another user's eval run is 404."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from studio import evals, figures
from studio.models import Run
from studio.models.evals import EvalRun
from studio.web import eval_data
from studio.web.owned import uuid_or_none

PICKER_RUNS = 100
MINUS = "\u2212"  # a minus sign, as wide as the plus
GROUPS = {
    "regression": "regressions",
    "improvement": "improvements",
    "unchanged": "unchanged",
    "only_a": "unmatched",
    "only_b": "unmatched",
}


@dataclass(frozen=True, slots=True)
class Side:
    case: dict[str, Any] | None
    """The case's figures in this run (``studio.evals.summary.cases``); none when the
    run had no such case."""
    session: str | None
    run: str | None
    """The session's latest run, for the step-by-step diff."""

    @property
    def text(self) -> str:
        return "—" if self.case is None else f"{self.case['passed']}/{self.case['runs']}"


@dataclass(frozen=True, slots=True)
class CaseRow:
    name: str
    a: Side
    b: Side

    @property
    def diff_url(self) -> str:
        if self.a.run is None or self.b.run is None:
            return ""
        return f"{reverse('run-compare')}?a={self.a.run}&b={self.b.run}"


def _eval(request: HttpRequest, value: str | None) -> EvalRun | None:
    if not value:
        return None
    pk = uuid_or_none(value)
    run = None if pk is None else eval_data.owned_eval_runs(request).filter(pk=pk).first()
    if run is None:
        raise Http404("No such eval run.")
    return run


@login_required
@require_GET
def eval_compare(request: HttpRequest) -> HttpResponse:
    a, b = _eval(request, request.GET.get("a")), _eval(request, request.GET.get("b"))
    recent = list(eval_data.owned_eval_runs(request)[:PICKER_RUNS])
    known = {run.pk for run in recent}
    chosen = recent + [run for run in (a, b) if run is not None and run.pk not in known]
    context: dict[str, Any] = {
        "section": "evals",
        "a": a,
        "b": b,
        "a_id": "" if a is None else str(a.pk),
        "b_id": "" if b is None else str(b.pk),
        "choices": [(str(run.pk), eval_data.run_label(run)) for run in chosen],
    }
    if a is not None and b is not None:
        context.update(_comparison(request, a, b))
    return render(request, "studio/eval_compare.html", context)


def _comparison(request: HttpRequest, a: EvalRun, b: EvalRun) -> dict[str, Any]:
    compared = evals.compare(a, b)
    sessions_a, sessions_b = _first_sessions(a), _first_sessions(b)
    latest = _latest_runs([*sessions_a.values(), *sessions_b.values()])
    groups: dict[str, list[CaseRow]] = {group: [] for group in dict.fromkeys(GROUPS.values())}
    for case in compared["cases"]:
        name = case["case_name"]
        at_a, at_b = sessions_a.get(name), sessions_b.get(name)
        row = CaseRow(
            name,
            Side(case["a"], at_a, latest.get(at_a or "")),
            Side(case["b"], at_b, latest.get(at_b or "")),
        )
        groups[GROUPS[case["change"]]].append(row)
    summary_a = eval_data.summary(a, compared["a"])
    summary_b = eval_data.summary(b, compared["b"])
    k = str(summary_b.k) if summary_a.k == summary_b.k else "k"
    return {
        "labels": {"a": eval_data.agent_at(a), "b": eval_data.agent_at(b)},
        "groups": groups,
        "figures": _figure_rows(summary_a, summary_b, k),
        "swap": f"{reverse('eval-compare')}?a={b.pk}&b={a.pk}",
        "chart": _chart(request, b),
    }


def _first_sessions(run: EvalRun) -> dict[str, str]:
    """Per case name, the session of its first repeat that has one."""
    sessions: dict[str, str] = {}
    rows = run.results.exclude(session=None).order_by("repeat")
    for name, session_id in rows.values_list("case_name", "session_id"):
        sessions.setdefault(name, str(session_id))
    return sessions


def _latest_runs(session_ids: list[str]) -> dict[str, str]:
    latest: dict[str, str] = {}
    rows = Run.objects.filter(session_id__in=session_ids).exclude(start_seq=None)
    for session_id, run_id in rows.order_by("created_at").values_list("session_id", "pk"):
        latest[str(session_id)] = str(run_id)
    return latest


def _figure_rows(a: eval_data.Summary, b: eval_data.Summary, k: str) -> list[dict[str, str]]:
    """The summaries side by side with B minus A, coloured ``good`` or ``bad`` for B."""
    cost = _figure("Cost", a.cost_value, b.cost_value, _cost, higher_is_better=False)
    cost.update(a=a.cost or "—", b=b.cost or "—")
    return [
        _figure("Pass rate", a.pass_rate, b.pass_rate, eval_data.percent, higher_is_better=True),
        _figure(f"pass@{k}", a.pass_at_k, b.pass_at_k, eval_data.percent, higher_is_better=True),
        cost,
        _figure("Latency p50", a.p50, b.p50, eval_data.seconds, higher_is_better=False),
        _figure("Latency p95", a.p95, b.p95, eval_data.seconds, higher_is_better=False),
    ]


def _cost(value: Any) -> str:
    return figures.cost(value) or "—"


def _figure(
    label: str, a: Any, b: Any, text: Callable[[Any], str], *, higher_is_better: bool
) -> dict[str, str]:
    delta, sign = "", ""
    if a is not None and b is not None:
        change = b - a
        if not change:
            delta = "±0"
        else:
            sign = "good" if (change > 0) == higher_is_better else "bad"
            delta = ("+" if change > 0 else MINUS) + _amount(abs(change), text)
    return {"label": label, "a": text(a), "b": text(b), "delta": delta, "sign": sign}


def _amount(change: Any, text: Callable[[Any], str]) -> str:
    if text is eval_data.percent:
        return f"{float(change) * 100:.0f} pts"
    return text(change)


def _chart(request: HttpRequest, run: EvalRun) -> dict[str, Any]:
    """What the chart plots (``json_script``): the ended evals of ``run``'s agent on its
    dataset, oldest first: agent version, time, pass rate (%), cost and latency."""
    points = evals.history(
        request.user,  # type: ignore[arg-type]
        agent=run.agent_version.agent,
        dataset=run.dataset_version.dataset,
    )
    return {
        "agent": run.agent_version.agent.name,
        "dataset": run.dataset_version.dataset.name,
        "points": [
            {
                "at": point["created_at"].timestamp(),
                "version": point["agent_version"],
                "pass_rate": None if point["pass_rate"] is None else point["pass_rate"] * 100,
                "cost": None if point["cost"] is None else float(point["cost"]),
                "p50": point["latency_p50_s"],
                "p95": point["latency_p95_s"],
            }
            for point in points
        ],
    }
