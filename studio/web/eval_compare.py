"""Two eval runs compared case by case: regressions first (a case that passed before
and fails now, or passes in fewer of its repeats), then improvements, then the cases
alike, then those only one run had; each case links both runs' sessions and, where
both ran, the step-by-step diff of their runs (``/compare/?a=&b=``). Below, the pass
rate, cost and latency of every eval of the agent on the dataset over time.

``/evals/compare/?a=<eval>&b=<eval>``: with one or none given the page asks for the
other; another user's eval run is 404."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from studio import figures
from studio.models import Run
from studio.models.evals import EvalCaseResult, EvalRun, EvalStatus
from studio.web import eval_data
from studio.web.owned import uuid_or_none

PICKER_RUNS = 100
HISTORY_RUNS = 100
"""The newest eval runs the chart plots."""


@dataclass(frozen=True, slots=True)
class Side:
    rate: tuple[int, int] | None
    """Repeats passed and finished; none when the run had no such case."""
    session: str | None
    run: str | None
    """The session's latest run, for the step-by-step diff."""

    @property
    def text(self) -> str:
        return "—" if self.rate is None else f"{self.rate[0]}/{self.rate[1]}"

    @property
    def value(self) -> float | None:
        return None if not self.rate or not self.rate[1] else self.rate[0] / self.rate[1]


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
        context.update(_comparison(a, b))
    return render(request, "studio/eval_compare.html", context)


def _comparison(a: EvalRun, b: EvalRun) -> dict[str, Any]:
    results_a, results_b = list(a.results.all()), list(b.results.all())
    rows = _rows(results_a, results_b)
    groups: dict[str, list[CaseRow]] = {
        "regressions": [],
        "improvements": [],
        "unchanged": [],
        "unmatched": [],
    }
    for row in rows:
        groups[_group(row)].append(row)
    figures_a, figures_b = eval_data.summary(a, results_a), eval_data.summary(b, results_b)
    return {
        "labels": {"a": eval_data.agent_at(a), "b": eval_data.agent_at(b)},
        "groups": groups,
        "figures": _figure_rows(
            figures_a, figures_b, str(b.repeats) if a.repeats == b.repeats else "k"
        ),
        "swap": f"{reverse('eval-compare')}?a={b.pk}&b={a.pk}",
        "chart": history(b, also=[a.pk, b.pk]),
    }


def _rows(results_a: list[EvalCaseResult], results_b: list[EvalCaseResult]) -> list[CaseRow]:
    """A row per case name of either run, in the order the newer run has them."""
    rates_a, rates_b = eval_data.case_rates(results_a), eval_data.case_rates(results_b)
    sessions_a, sessions_b = _first_sessions(results_a), _first_sessions(results_b)
    latest = _latest_runs([*sessions_a.values(), *sessions_b.values()])
    names = list(dict.fromkeys([r.case_name for r in results_b] + [r.case_name for r in results_a]))
    return [
        CaseRow(
            name,
            Side(rates_a.get(name), sessions_a.get(name), latest.get(sessions_a.get(name, ""))),
            Side(rates_b.get(name), sessions_b.get(name), latest.get(sessions_b.get(name, ""))),
        )
        for name in names
    ]


def _first_sessions(results: list[EvalCaseResult]) -> dict[str, str]:
    """Per case name, the session of its first repeat that has one."""
    sessions: dict[str, str] = {}
    for result in sorted(results, key=lambda r: r.repeat):
        if result.session_id is not None:
            sessions.setdefault(result.case_name, str(result.session_id))
    return sessions


def _latest_runs(session_ids: list[str]) -> dict[str, str]:
    latest: dict[str, str] = {}
    rows = Run.objects.filter(session_id__in=session_ids).exclude(start_seq=None)
    for session_id, run_id in rows.order_by("created_at").values_list("session_id", "pk"):
        latest[str(session_id)] = str(run_id)
    return latest


def _group(row: CaseRow) -> str:
    before, now = row.a.value, row.b.value
    if before is None or now is None:
        return "unmatched"
    if now < before:
        return "regressions"
    return "improvements" if now > before else "unchanged"


def _figure_rows(a: eval_data.Summary, b: eval_data.Summary, k: str) -> list[dict[str, str]]:
    """The summaries side by side with B minus A, coloured ``good`` or ``bad`` for B."""
    rows = [
        _figure("Pass rate", a.pass_rate, b.pass_rate, eval_data.percent, higher_is_better=True),
        _figure(f"pass@{k}", a.pass_at_k, b.pass_at_k, eval_data.percent, higher_is_better=True),
        _figure("Latency p50", a.p50, b.p50, _seconds, higher_is_better=False),
        _figure("Latency p95", a.p95, b.p95, _seconds, higher_is_better=False),
    ]
    cost_a, cost_b = a.cost_value, b.cost_value
    cost = _figure("Cost", cost_a, cost_b, lambda _: "", higher_is_better=False)
    cost.update(a=a.cost or "—", b=b.cost or "—")
    if cost_a is not None and cost_b is not None:
        change = figures.cost(abs(cost_b - cost_a))
        cost["delta"] = "±0" if cost_a == cost_b else f"{'+' if cost_b > cost_a else MINUS}{change}"
    return [*rows[:2], cost, *rows[2:]]


MINUS = "\u2212"


def _seconds(value: Any) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _figure(
    label: str, a: Any, b: Any, text: Callable[[Any], str], *, higher_is_better: bool
) -> dict[str, str]:
    delta, sign = "", ""
    if a is not None and b is not None:
        change = float(b - a)
        delta = f"{change * 100:+.0f} pts" if text is eval_data.percent else f"{change:+.2f} s"
        if abs(change) < 1e-9:
            delta = "±0"
        elif (change > 0) == higher_is_better:
            sign = "good"
        else:
            sign = "bad"
    return {
        "label": label,
        "a": text(a),
        "b": text(b),
        "delta": delta.replace("-", MINUS),
        "sign": sign,
    }


def history(run: EvalRun, also: list[Any]) -> dict[str, Any]:
    """What the chart plots (``json_script``): every eval run of ``run``'s agent on its
    dataset that ran to its end, and those of ``also`` (the two compared, as far as they
    got), oldest first, each with its agent version, pass rate, cost and p50."""
    runs = list(
        EvalRun.objects.filter(
            Q(status=EvalStatus.SUCCEEDED) | Q(pk__in=also),
            owner_id=run.owner_id,
            agent_version__agent_id=run.agent_version.agent_id,
            dataset_version__dataset_id=run.dataset_version.dataset_id,
        )
        .select_related("agent_version", "dataset_version")
        .prefetch_related("results")
        .order_by("-created_at")[:HISTORY_RUNS]
    )
    points = []
    for each in reversed(runs):
        results = list(each.results.all())
        figures = eval_data.summary(each, results)
        known = [float(r.cost) for r in results if r.cost is not None]
        points.append(
            {
                "at": each.created_at.timestamp(),
                "version": each.agent_version.number,
                "pass_rate": None
                if figures.pass_rate is None
                else round(figures.pass_rate * 100, 1),
                "cost": sum(known) if known else None,
                "p50": figures.p50,
            }
        )
    return {
        "agent": run.agent_version.agent.name,
        "dataset": run.dataset_version.dataset.name,
        "points": points,
    }
