"""The spans of runs (``agents_core.spans``): ``GET /api/runs/{id}/spans/`` and
``GET /api/sessions/{id}/spans/``, owner-scoped like their run or session; a live run's
open spans (no ``end``, status ``open``) are included."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from agents_core.span_costs import SpanCost
from agents_core.spans import Span
from studio import wire
from studio.api.serializers import RunSerializer
from studio.models import Run, Session
from studio.traces.reads import run_spans_json, session_spans

SESSION_RUNS = 100
"""A session's spans cover its newest runs, at most this many."""


class SpanCostSerializer(serializers.Serializer[SpanCost]):
    """What the model calls in a span cost."""

    amount = serializers.DecimalField(
        max_digits=None,
        decimal_places=None,
        coerce_to_string=True,
        allow_null=True,
        help_text="The sum of the known costs, a decimal string; `null` when none is known "
        "or the calls were in more than one currency.",
    )
    currency = serializers.CharField(allow_null=True, help_text="ISO 4217, e.g. `USD`.")
    complete = serializers.BooleanField(
        help_text="Every call's cost is known, in one currency (unknown is never zero)."
    )
    calls = serializers.IntegerField(min_value=0, help_text="The model calls summed.")
    unknown = serializers.IntegerField(min_value=0, help_text="Of them, those of unknown cost.")


class SpanSerializer(serializers.Serializer[Span]):
    """One agent run, model call, tool call, wait for a person or for a rate limit."""

    span_id = serializers.CharField()
    parent_span_id = serializers.CharField(allow_null=True)
    kind = serializers.ChoiceField(choices=["agent", "model", "tool", "human", "wait"])
    name = serializers.CharField(help_text="The agent's or tool's name, `model` or `approval`.")
    author = serializers.CharField(help_text="The agent the span belongs to.")
    branch = serializers.CharField(allow_null=True)
    invocation_id = serializers.CharField(help_text="The run's invocation.")
    start = serializers.DateTimeField()
    end = serializers.DateTimeField(allow_null=True, help_text="`null` while it is open.")
    status = serializers.ChoiceField(choices=["open", "ok", "error"])
    start_seq = serializers.IntegerField(allow_null=True)
    end_seq = serializers.IntegerField(allow_null=True)
    input_tokens = serializers.IntegerField(allow_null=True)
    cached_input_tokens = serializers.IntegerField(
        allow_null=True, help_text="Of input_tokens, those served from the provider's cache."
    )
    output_tokens = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True)
    cost = SpanCostSerializer(
        allow_null=True,
        help_text="A model call's cost, or the sum of the calls beneath an agent (or a tool "
        "that ran an agent); `null` when it has none (or, for a call, while it streams).",
    )
    attributes = serializers.DictField(help_text="Kind-specific details (agents_core.spans).")

    def to_representation(self, instance: Span) -> dict[str, Any]:
        return instance.model_dump(mode="json")


class RunSpansSerializer(serializers.Serializer[Any]):
    run = RunSerializer()
    spans = SpanSerializer(many=True)


class SessionSpansSerializer(serializers.Serializer[Any]):
    runs = RunSerializer(many=True, help_text="The session's newest runs, oldest first.")
    spans = SpanSerializer(many=True)


def _spans(spans: list[Span]) -> list[dict[str, Any]]:
    return [span.model_dump(mode="json") for span in spans]


class RunSpans:
    """``spans`` for the run viewset."""

    get_object: Any

    @extend_schema(responses=RunSpansSerializer)
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def spans(self, request: Request, pk: str | None = None) -> HttpResponse:
        """The run's spans: agents, model calls, tool calls and waits for a person, each
        with its parent, times, status and tokens; open ones while it runs."""
        run: Run = self.get_object()
        # The spans come as JSON text (an ended run's are kept that way), written as is.
        head = json.dumps({"run": wire.run_payload(run)}, separators=(",", ":"))
        body = b"".join([head[:-1].encode(), b',"spans":', run_spans_json(run), b"}"])
        return HttpResponse(body, content_type="application/json")


class SessionSpans:
    """``spans`` for the session viewset."""

    get_object: Any

    @extend_schema(responses=SessionSpansSerializer)
    @action(detail=True, methods=["get"], filter_backends=[], pagination_class=None)
    def spans(self, request: Request, pk: str | None = None) -> Response:
        """The spans of the session's newest runs, run after run."""
        session: Session = self.get_object()
        runs = list(reversed(session.runs.order_by("-created_at")[:SESSION_RUNS]))
        return Response(
            {
                "runs": [wire.run_payload(run) for run in runs],
                "spans": _spans(session_spans(session.pk, runs)),
            }
        )
