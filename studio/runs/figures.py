"""What an ended run's record says of it, written from its stored events: its cost, its
wall time split (``studio.traces.timing``), its final spans kept for the spans API, its
model calls stamped with their run, model and tool (``rollups.attribution``) and added
to its owner's days (``rollups.days``), and its session's cost.

``records.end_run`` writes them as a run ends. ``refigure_ended`` writes them again for
a run whose steps arrived after it ended: an ingested trace's spans that another
service's exporter sent after the root (``services.ingest``).
"""

from __future__ import annotations

import uuid

from django.db import transaction

from agents_core.spans import Span
from studio.agents import versions
from studio.models import Event, Run, Session
from studio.rollups import days
from studio.rollups.attribution import attribute_calls
from studio.runs import run_costs
from studio.traces.reads import keep_final_spans, run_spans
from studio.traces.timing import wall_time


def write(run: Run, models: versions.VersionModels | None) -> list[Span]:
    """Write the figures of ``run``, which has its ending, and save it; its final spans.

    ``models``: what its executor read of the version's models (its calls' models);
    ``None`` reads them now."""
    cost = run_costs.run_cost(run)
    run.cost, run.cost_currency, run.cost_complete = cost.amount, cost.currency, cost.complete
    spans = run_spans(run)
    run.timing = wall_time(run.created_at, run.started_at, run.ended_at or run.created_at, spans)
    save_ended(run)
    keep_final_spans(run, spans)
    attribute_calls(run, spans, *_models(run, models))
    days.add_run(run)
    return spans


def refigure_ended(run_id: uuid.UUID) -> None:
    """Write ended ``run_id``'s figures again from its stored events, with steps stored
    after it ended. Its calls leave its days and are added back."""
    with transaction.atomic():
        rows = Run.objects.select_for_update(of=("self",)).select_related(
            "session__agent_version__agent"
        )
        found = rows.filter(pk=run_id, ended_at__isnull=False).first()
        if found is not None:
            days.subtract_run(found)  # before the late calls are attributed to it
            write(found, None)


def save_ended(run: Run) -> None:
    """Save ended ``run`` and what its session says of its runs (status, cost)."""
    run.save()
    added = run_costs.session_cost(run.session_id)
    Session.objects.filter(pk=run.session_id).update(
        status=run.status,
        updated_at=run.ended_at,
        cost=added.amount,
        cost_currency=added.currency,
        cost_complete=added.complete,
    )


def _models(
    run: Run, read: versions.VersionModels | None
) -> tuple[dict[str, str], str, dict[str, str]]:
    """The model of each agent of ``run``'s version, of its compaction summaries, and of
    each model config by name (for answers that name the config that gave them): from
    ``read``, what its executor read, or read now. A run with no version (one ingested
    over OTLP) names its calls' models itself: each answer's ``model``."""
    if read is None and (version := run.session.agent_version) is not None:
        read = versions.version_models(version)
    if read is None:
        answers = Event.objects.filter(
            session_id=run.session_id, invocation_id=run.invocation_id, type="agent_message"
        )
        named = answers.filter(payload__model__isnull=False).exclude(payload__model=None)
        models = named.values_list("payload__model", flat=True).order_by().distinct()
        return {}, "", {model: model for model in models if isinstance(model, str) and model}
    return read.agent_models, read.summary_model, read.config_models
