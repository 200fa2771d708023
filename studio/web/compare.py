"""The compare page: two of the user's runs side by side, step by step (``studio.diffs``).

``/compare/?a=<run>&b=<run>`` compares any two runs (a fork or a replay links here with
its own and its origin's); with one of them, or none, the page asks for the other. The
session list sends the sessions ticked (``?session=..&session=..``): their latest runs
are compared, or a single session's last two. Another user's run is 404.

Everything the runs said reaches the page as template text (escaped), never as HTML.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from studio import figures
from studio.diffs.compare import CostFigure, Figure, Row, RunDiff, string_segments
from studio.diffs.json_diff import Change
from studio.diffs.steps import MESSAGE, TOOL, Step
from studio.models import Run
from studio.services.diffs import compare_runs
from studio.web.owned import uuid_or_none

MINUS = "\u2212"  # a minus sign, as wide as the plus beside it
PICKER_RUNS = 100
"""The newest runs each picker offers (and the two compared, if older)."""
SAME_SHOWN = 3
"""Identical steps shown around the differences; longer stretches fold up."""
LABELS = {
    "input_tokens": "Input tokens",
    "output_tokens": "Output tokens",
    "wall_ms": "Wall time",
    "model_ms": "Model time",
    "tools_ms": "Tool time",
    "steps": "Steps",
    "model_calls": "Model calls",
    "tool_calls": "Tool calls",
}
KINDS = {
    "user_message": "User message",
    MESSAGE: "Model reply",
    TOOL: "Tool call",
    "error": "Error",
    "approval_request": "Approval asked",
    "approval_decision": "Approval decided",
    "user_question": "Question",
    "user_answer": "Answer",
    "policy_decision": "Policy",
    "model_retry": "Model retry",
    "model_fallback": "Model fallback",
    "compaction": "Compaction",
    "memory_saved": "Key facts saved",
}


def owned_runs(request: HttpRequest) -> QuerySet[Run]:
    return Run.objects.filter(session__owner_id=request.user.pk).select_related(
        "session__agent_version__agent"
    )


def _run(request: HttpRequest, value: str | None) -> Run | None:
    """The user's run ``value`` names; none when not given; 404 when not theirs."""
    if not value:
        return None
    run_id = uuid_or_none(value)
    run = None if run_id is None else owned_runs(request).filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run.")
    return run


@login_required
@require_GET
def run_compare(request: HttpRequest) -> HttpResponse:
    if "session" in request.GET:
        return _from_sessions(request, request.GET.getlist("session"))
    a, b = _run(request, request.GET.get("a")), _run(request, request.GET.get("b"))
    context: dict[str, Any] = {
        "section": "sessions",
        "a": a,
        "b": b,
        "a_id": "" if a is None else str(a.pk),
        "b_id": "" if b is None else str(b.pk),
        "choices": _choices(request, [run for run in (a, b) if run is not None]),
    }
    if a is not None and b is not None:
        context.update(_diff_context(a, b, compare_runs(a, b)))
    return render(request, "studio/run_compare.html", context)


def _from_sessions(request: HttpRequest, ids: list[str]) -> HttpResponse:
    """The runs of the sessions ticked in the list: each one's latest (the older one
    first, as the baseline), or a single session's last two."""
    sessions = {uuid for uuid in (uuid_or_none(value) for value in ids) if uuid is not None}
    runs = owned_runs(request).filter(session_id__in=sessions).exclude(start_seq=None)
    if len(sessions) == 1:
        picked = list(runs.order_by("-created_at")[:2])
    elif len(sessions) == 2:
        picked = [r for s in sessions if (r := runs.filter(session_id=s).first()) is not None]
    else:
        picked = []
    if len(picked) != 2:
        messages.info(request, "Tick two sessions (or one with two runs or more) to compare.")
        return redirect("run-compare")
    older, newer = sorted(picked, key=lambda run: run.created_at)
    return redirect(f"{reverse('run-compare')}?a={older.pk}&b={newer.pk}")


def _choices(request: HttpRequest, chosen: list[Run]) -> list[tuple[str, str]]:
    recent = list(owned_runs(request).exclude(start_seq=None)[:PICKER_RUNS])
    known = {run.pk for run in recent}
    runs = recent + [run for run in chosen if run.pk not in known]
    return [(str(run.pk), run_label(run)) for run in runs]


def run_label(run: Run) -> str:
    """``Weather · “What is…” · Mar 4 14:02 · succeeded``: a run as a picker lists it."""
    message = run.message if len(run.message) <= 40 else f"{run.message[:39]}…"
    title = run.session.title or "Untitled session"
    when = f"{run.created_at:%b} {run.created_at.day} {run.created_at:%H:%M}"
    return f"{title} · “{message}” · {when} · {run.status}"


# The diff, as the template shows it


@dataclass(frozen=True, slots=True)
class FigureRow:
    label: str
    a: str
    b: str
    delta: str
    sign: str  # "up", "down" or "" (the same, or not comparable)


@dataclass(frozen=True, slots=True)
class StepView:
    """One step as a cell shows it: its head and figures, its text, the tools it
    called, a tool call's arguments and result, the rest of what it holds as JSON, and
    a one-line preview for a step both runs took alike."""

    step: Step
    label: str
    text: str
    thinking: str
    calls: list[str]
    args: str
    result: str
    details: str
    preview: str
    failed: bool
    tokens: str
    cost: str


@dataclass(frozen=True, slots=True)
class RowView:
    status: str
    a: StepView | None
    b: StepView | None
    changes: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Fold:
    """Identical steps folded away: ``rows`` of them."""

    rows: list[RowView]


def _diff_context(a: Run, b: Run, diff: RunDiff) -> dict[str, Any]:
    return {
        "sides": [("A", a), ("B", b)],
        "state_a_json": _json(diff.state_a),
        "diff": diff,
        "counts": diff.counts,
        "rows": _folded([_row_view(row) for row in diff.rows]),
        "figures": [_figure_row(f) for f in diff.figures] + [_cost_row(diff.cost)],
        "state_changes": [_change_view(change) for change in diff.state_changes],
        "answer": diff.answer,
        "swap": f"{reverse('run-compare')}?a={b.pk}&b={a.pk}",
    }


def _folded(rows: list[RowView]) -> list[RowView | Fold]:
    """Long stretches of identical steps folded up, keeping ``SAME_SHOWN`` beside each
    difference (and at the start and end)."""
    shown: list[RowView | Fold] = []
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end].status == "same":
            end += 1
        if end - start > 2 * SAME_SHOWN + 1:
            cut_from = start + (SAME_SHOWN if start else 0)
            cut_to = end - (SAME_SHOWN if end < len(rows) else 0)
            shown += [*rows[start:cut_from], Fold(rows[cut_from:cut_to]), *rows[cut_to:end]]
        else:
            shown += rows[start:end]
        if end < len(rows):
            shown.append(rows[end])
        start = end + 1
    return shown


def _row_view(row: Row) -> RowView:
    return RowView(
        status=row.status,
        a=None if row.a is None else step_view(row.a),
        b=None if row.b is None else step_view(row.b),
        changes=[_change_view(change) for change in row.changes],
    )


def step_view(step: Step) -> StepView:
    rest = dict(step.content)
    parts = rest.pop("parts", [])
    calls = rest.pop("calls", []) if step.kind == MESSAGE else []
    text = "".join(p.get("text", "") for p in parts if p.get("kind") == "text")
    thinking = "".join(p.get("text", "") for p in parts if p.get("kind") == "thinking")
    others = [p for p in parts if p.get("kind") not in ("text", "thinking")]
    if others:
        rest["parts"] = others
    is_tool = step.kind == TOOL
    args = _json(rest.pop("args", {})) if is_tool else ""
    result = rest.pop("result", None) if is_tool else None
    failed = bool(rest.get("is_error")) or step.kind == "error"
    label = KINDS.get(step.kind, step.kind.replace("_", " ").capitalize())
    written = "" if result is None else result if isinstance(result, str) else _json(result)
    return StepView(
        step=step,
        label=f"{label} · {step.tool}" if step.tool else label,
        text=text,
        thinking=thinking,
        calls=calls,
        args=args,
        result=written,
        details=_json(rest) if rest else "",
        preview=_preview(text, calls, step, written),
        failed=failed,
        tokens=figures.tokens({"input": step.input_tokens or 0, "output": step.output_tokens or 0}),
        cost=figures.cost(step.cost, step.cost_currency) if step.cost is not None else "",
    )


def _preview(text: str, calls: list[str], step: Step, result: str) -> str:
    if text:
        return " ".join(text.split())
    if calls:
        return "calls " + ", ".join(calls)
    if step.kind == TOOL:
        args = json.dumps(step.content.get("args", {}), ensure_ascii=False)
        return f"{args} → {' '.join(result.split())}"
    return json.dumps(step.content, ensure_ascii=False)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _change_view(change: Change) -> dict[str, Any]:
    return {
        "where": change.where,
        "op": change.op,
        "before": "" if change.op == "added" else _json(change.before),
        "after": "" if change.op == "removed" else _json(change.after),
        "segments": string_segments(change),
    }


def _figure_row(figure: Figure) -> FigureRow:
    write = _duration if figure.name.endswith("_ms") else _count
    delta = figure.delta
    label, a, b = LABELS.get(figure.name, figure.name), write(figure.a), write(figure.b)
    if delta is None:
        return FigureRow(label, a, b, "—", "")
    written = _signed(delta, write(abs(delta)), zero=write(0))
    return FigureRow(label, a, b, written, "" if written == "±0" else _sign(delta))


def _cost_row(cost: CostFigure) -> FigureRow:
    a = figures.cost(cost.a.amount, cost.a.currency, complete=cost.a.complete) or "unknown"
    b = figures.cost(cost.b.amount, cost.b.currency, complete=cost.b.complete) or "unknown"
    delta = cost.delta
    if delta is None:
        return FigureRow("Cost", a, b, "—", "")
    written = figures.cost(abs(delta), cost.a.currency, complete=cost.complete)
    return FigureRow("Cost", a, b, _signed(delta, written), _sign(delta))


def _count(value: int | float | Decimal | None) -> str:
    return "—" if value is None else f"{value:,}"


def _duration(value: int | float | Decimal | None) -> str:
    return "—" if value is None else figures.duration(float(value))


def _signed(delta: int | float | Decimal, written: str, *, zero: str = "") -> str:
    """``+12 ms``, or ``$0.0012`` after a minus sign; ``±0`` for no difference, or for
    one too small to write."""
    if not delta or written == zero:
        return "±0"
    return ("+" if delta > 0 else MINUS) + written


def _sign(delta: int | float | Decimal | None) -> str:
    if not delta:
        return ""
    return "up" if delta > 0 else "down"
