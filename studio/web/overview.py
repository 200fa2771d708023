"""The overview dashboard (issue 19): a user's runs, errors, latency, tokens and cost per
day, agent and model over a range of days, each figure a link down to its sessions."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from studio.figures import cost as written_cost
from studio.overview import DayRange, Figures, Row, overview

DEFAULT_DAYS = 14
MAX_DAYS = 92


class RangeForm(forms.Form):
    start = forms.DateField(required=False, label="From", widget=forms.DateInput({"type": "date"}))
    end = forms.DateField(required=False, label="To", widget=forms.DateInput({"type": "date"}))

    def span(self) -> DayRange:
        """The chosen days (the last 14 by default), at most ``MAX_DAYS`` of them."""
        data = self.cleaned_data if self.is_valid() else {}
        last = data.get("end") or timezone.now().date()
        first = data.get("start") or last - timedelta(days=DEFAULT_DAYS - 1)
        first, last = min(first, last), max(first, last)
        return DayRange(max(first, last - timedelta(days=MAX_DAYS - 1)), last)


@login_required
@require_GET
def overview_page(request: HttpRequest) -> HttpResponse:
    form = RangeForm(request.GET)
    span = form.span()
    figures = overview(request.user, span)  # type: ignore[arg-type]
    return render(
        request,
        "studio/overview.html",
        {
            "section": "overview",
            # The range as used (defaults filled in, clamped): what the pickers show.
            "form": RangeForm({"start": span.first.isoformat(), "end": span.last.isoformat()}),
            "figures": figures,
            "span": span,
            "days": [_row(r, _links(r.key, r.key)) for r in figures.days],
            "agents": [_row(r, _agent_links(span, r)) for r in figures.agents],
            "models": [_row(r, _links(span.first, span.last, model=r.key)) for r in figures.models],
            "total": _row(figures.total, _links(span.first, span.last)),
            "chart": _chart(figures),
        },
    )


def _agent_links(span: DayRange, row: Row) -> dict[str, str]:
    if row.external:  # an agent built elsewhere: its ingested sessions
        return _links(span.first, span.last, external_agent=row.key)
    return _links(span.first, span.last, agent=row.key)


def _links(
    first: date, last: date, agent: Any = None, model: str = "", external_agent: Any = None
) -> dict[str, str]:
    """The session list filtered to the runs a row counts, and to its failed ones."""
    query: dict[str, str] = {"ran_from": first.isoformat(), "ran_to": last.isoformat()}
    if agent is not None:
        query["agent"] = str(agent)
    if external_agent is not None:
        query["external_agent"] = str(external_agent)
    if model:
        query["ran_model"] = model
    sessions = reverse("sessions")
    return {
        "sessions": f"{sessions}?{urlencode(query)}",
        "errors": f"{sessions}?{urlencode({**query, 'ran_errors': 'on'})}",
    }


def _row(row: Row, links: dict[str, str]) -> dict[str, Any]:
    return {
        "row": row,
        "links": links,
        "tokens": f"{row.input_tokens + row.output_tokens:,}",  # as every page writes them
        "cost": _cost_text(row),
    }


def _cost_text(row: Row) -> str:
    """The row's cost as every page writes one (``figures.cost``): ``$0.0012``, several
    currencies side by side, ``≥`` when some calls' costs are unknown."""
    complete = not row.cost_incomplete
    text = ", ".join(
        written_cost(amount, currency, complete=complete)
        for currency, amount in sorted(row.cost.items())
    )
    return text or ("unknown" if row.cost_incomplete else "—")


def _chart(figures: Figures) -> dict[str, Any]:
    """What the page's charts plot (``json_script``): one value per day, in order; cost
    in the currency most spent in (a chart has one unit)."""
    currencies = sorted(figures.total.cost, key=lambda c: -figures.total.cost[c])
    currency = currencies[0] if currencies else ""
    return {
        "days": [row.key.isoformat() for row in figures.days],
        "runs": [row.runs for row in figures.days],
        "errors": [row.errors for row in figures.days],
        "p50": [row.p50 for row in figures.days],
        "p95": [row.p95 for row in figures.days],
        "tokens": [row.input_tokens + row.output_tokens for row in figures.days],
        "cost": [float(row.cost.get(currency, 0)) for row in figures.days],
        "currency": currency,
    }
