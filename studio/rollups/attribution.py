"""A model call's attribution, written on its stored event when its run ends.

The call's agent (``Event.author``), session, user and day are already on the row or
its session. What ``end_run`` adds, from the run's final spans, is the run, the model
its agent called and the tool call that led to it: the nearest enclosing tool span (an
agent called as a tool runs inside the call's span), or for an agent reached by a
transfer, the transfer's tool call. Done once per run in one UPDATE, so roll-ups are
plain indexed sums over ``Event`` with no span walking per request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db.models import Case, CharField, Value, When

from agents_core.events import EventType
from agents_core.spans import Span
from studio.models import Event, Run
from studio.rollups.queries import MODEL_CALL_TYPES


def attribute_calls(
    run: Run,
    spans: Sequence[Span],
    models: Mapping[str, str],
    summary_model: str = "",
    answered_by: Mapping[str, str] | None = None,
) -> int:
    """Stamp ``run``, the model (``models``, by agent name; ``summary_model`` for a
    compaction summary; for an answer that names the model config that gave it, a
    fallback's, that config's model in ``answered_by``, by config name) and the leading
    tool call on each of ``run``'s model-call events; the number of rows updated."""
    if not run.invocation_id or run.start_seq is None:
        return 0
    tools = leading_tools(spans)
    rows = Event.objects.filter(
        session_id=run.session_id,
        seq__gt=run.start_seq,
        invocation_id=run.invocation_id,
        type__in=MODEL_CALL_TYPES,
    )
    summaries = When(type=EventType.COMPACTION, then=Value(summary_model))
    answers = [
        When(payload__model=name, then=Value(model)) for name, model in (answered_by or {}).items()
    ]
    return rows.update(
        run=run,
        model=_case("author", models, summaries, *answers),
        tool=Case(
            *[When(seq__in=seqs, then=Value(name)) for name, seqs in _by_value(tools).items()],
            default=Value(""),
            output_field=CharField(),
        ),
    )


def leading_tools(spans: Sequence[Span]) -> dict[int, str]:
    """The name of the tool call that led to each model call (by its event's seq), for
    the calls made inside one; calls of the run's own agents are left out."""
    by_id = {span.span_id: span for span in spans}
    transfers = {  # (the transferring agent's span, the agent it handed over to)
        (span.parent_span_id, span.attributes["transfer_to"]): span.name
        for span in spans
        if span.kind == "tool" and span.attributes.get("transfer_to")
    }
    found: dict[int, str] = {}
    for span in spans:
        if span.kind == "model" and span.end_seq is not None:
            tool = _enclosing_tool(span, by_id, transfers)
            if tool:
                found[span.end_seq] = tool
    return found


def _enclosing_tool(
    span: Span, by_id: Mapping[str, Span], transfers: Mapping[tuple[str | None, str], str]
) -> str:
    seen: set[str] = set()
    parent = by_id.get(span.parent_span_id or "")
    while parent is not None and parent.span_id not in seen:
        if parent.kind == "tool":
            return parent.name
        handed_over = transfers.get((parent.parent_span_id, parent.name))
        if parent.kind == "agent" and handed_over:  # its agent runs beside the tool call
            return handed_over
        seen.add(parent.span_id)
        parent = by_id.get(parent.parent_span_id or "")
    return ""


def _by_value(found: Mapping[int, str]) -> dict[str, list[int]]:
    grouped: dict[str, list[int]] = {}
    for seq, name in found.items():
        grouped.setdefault(name, []).append(seq)
    return grouped


def _case(field: str, values: Mapping[str, str], *first: When) -> Case:
    whens = [When(**{field: key}, then=Value(value)) for key, value in values.items()]
    return Case(*first, *whens, default=Value(""), output_field=CharField())
