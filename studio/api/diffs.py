"""``GET /api/runs/compare/?a=<run id>&b=<run id>``: two of your runs compared step by
step (``studio.diffs``). Either run being another user's answers 404, as if it did not
exist."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import wire
from studio.api.permissions import request_owner
from studio.api.schema import error_responses
from studio.api.serializers import RunSerializer
from studio.diffs.compare import STATUSES, RunDiff, string_segments
from studio.diffs.json_diff import Change
from studio.models import Run
from studio.services.diffs import compare_runs


class CompareQuerySerializer(serializers.Serializer[Any]):
    a = serializers.UUIDField(help_text="The run compared against (the baseline).")
    b = serializers.UUIDField(help_text="The run compared with it.")


def _money(amount: Decimal | None) -> str | None:
    """A cost as the API writes costs: a decimal string with all its places."""
    if amount is None:
        return None
    return format(Decimal(amount).quantize(wire.COST_PLACES), "f")  # never "0E-10"


class DiffSegmentSerializer(serializers.Serializer[Any]):
    op = serializers.ChoiceField(choices=["equal", "delete", "insert"])
    text = serializers.CharField()


class DiffChangeSerializer(serializers.Serializer[Change]):
    """One difference of a JSON value: a path added, removed or changed."""

    path = serializers.ListField(
        child=serializers.JSONField(), help_text="Keys (strings) and array indexes (numbers)."
    )
    where = serializers.CharField(help_text="The path as code reads it: `args.items[2]`.")
    op = serializers.ChoiceField(choices=["added", "removed", "changed"])
    before = serializers.JSONField(allow_null=True, help_text="`null` when added.")
    after = serializers.JSONField(allow_null=True, help_text="`null` when removed.")
    segments = DiffSegmentSerializer(
        many=True, allow_null=True, help_text="Both sides texts: the words that changed."
    )

    def to_representation(self, instance: Change) -> dict[str, Any]:
        segments = string_segments(instance)
        words = None if segments is None else DiffSegmentSerializer(segments, many=True).data
        return {
            "path": list(instance.path),
            "where": instance.where,
            "op": instance.op,
            "before": instance.before,
            "after": instance.after,
            "segments": words,
        }


class DiffStepSerializer(serializers.Serializer[Any]):
    """One step of a run: a message, a model reply, a tool call with its result, an
    error, an approval... Its figures are shown, never compared."""

    seq = serializers.IntegerField(help_text="The event it starts at.")
    result_seq = serializers.IntegerField(allow_null=True, help_text="A tool call's result.")
    kind = serializers.CharField(help_text="`model_reply`, `tool_call` or the event's type.")
    author = serializers.CharField()
    branch = serializers.CharField(help_text="The agent's path, e.g. `root.researcher`.")
    tool = serializers.CharField(allow_blank=True, help_text="A tool call's or approval's tool.")
    content = serializers.DictField(help_text="What is compared: no ids, seqs or times.")
    input_tokens = serializers.IntegerField(allow_null=True)
    output_tokens = serializers.IntegerField(allow_null=True)
    cost = serializers.CharField(allow_null=True, help_text="A decimal string.")
    cost_currency = serializers.CharField(allow_blank=True)
    latency_ms = serializers.FloatField(allow_null=True)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["cost"] = _money(instance.cost)
        data["content"] = instance.content
        return data


class DiffRowSerializer(serializers.Serializer[Any]):
    status = serializers.ChoiceField(choices=list(STATUSES))
    a = DiffStepSerializer(allow_null=True, help_text="`null`: added in b.")
    b = DiffStepSerializer(allow_null=True, help_text="`null`: removed in b.")
    changes = DiffChangeSerializer(many=True, help_text="For a changed step: what changed.")


class DiffCountsSerializer(serializers.Serializer[Any]):
    same = serializers.IntegerField()
    changed = serializers.IntegerField()
    added = serializers.IntegerField()
    removed = serializers.IntegerField()


class DiffStateSerializer(serializers.Serializer[Any]):
    a = serializers.DictField(source="state_a", help_text="What a's events set (`null`: removed).")
    b = serializers.DictField(source="state_b")
    changes = DiffChangeSerializer(many=True, source="state_changes")


class DiffAnswerSerializer(serializers.Serializer[Any]):
    a = serializers.CharField(allow_null=True, source="answer_a", help_text="`null`: none.")
    b = serializers.CharField(allow_null=True, source="answer_b")
    segments = DiffSegmentSerializer(many=True, source="answer", help_text="Empty when the same.")


class DiffFigureSerializer(serializers.Serializer[Any]):
    name = serializers.ChoiceField(
        choices=[
            "input_tokens",
            "output_tokens",
            "wall_ms",
            "model_ms",
            "tools_ms",
            "steps",
            "model_calls",
            "tool_calls",
        ]
    )
    a = serializers.FloatField(allow_null=True)
    b = serializers.FloatField(allow_null=True)
    delta = serializers.FloatField(
        allow_null=True, help_text="b minus a; `null` unless both are known."
    )


class DiffCostSerializer(serializers.Serializer[Any]):
    """Both runs' costs (decimal strings); unknown is never zero."""

    a = serializers.CharField(allow_null=True)
    b = serializers.CharField(allow_null=True)
    currency_a = serializers.CharField()
    currency_b = serializers.CharField()
    delta = serializers.CharField(
        allow_null=True, help_text="b minus a; `null` unless both known, in one currency."
    )
    complete = serializers.BooleanField(help_text="Every model call's cost is known.")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return {
            "a": _money(instance.a.amount),
            "b": _money(instance.b.amount),
            "currency_a": instance.a.currency,
            "currency_b": instance.b.currency,
            "delta": _money(instance.delta),
            "complete": instance.complete,
        }


class DiffRunSerializer(serializers.Serializer[Any]):
    run = RunSerializer()
    session_title = serializers.CharField(allow_blank=True)
    agent = serializers.CharField(allow_null=True)
    agent_version = serializers.IntegerField(allow_null=True)


class RunDiffSerializer(serializers.Serializer[Any]):
    a = DiffRunSerializer()
    b = DiffRunSerializer()
    identical = serializers.BooleanField(help_text="Only figures differ.")
    truncated = serializers.BooleanField(help_text="A run was too long: compared in part.")
    counts = DiffCountsSerializer()
    steps = DiffRowSerializer(many=True, help_text="The steps of both runs, aligned.")
    state = DiffStateSerializer(help_text="The state each run set, and what differs.")
    final_answer = DiffAnswerSerializer()
    figures = DiffFigureSerializer(many=True)
    cost = DiffCostSerializer()


def compared_run(run: Run) -> dict[str, Any]:
    version = run.session.agent_version
    return {
        "run": run,
        "session_title": run.session.title,
        "agent": None if version is None else version.agent.name,
        "agent_version": None if version is None else version.number,
    }


def diff_payload(a: Run, b: Run, diff: RunDiff) -> dict[str, Any]:
    body = {
        "a": compared_run(a),
        "b": compared_run(b),
        "identical": diff.identical,
        "truncated": diff.truncated,
        "counts": diff.counts,
        "steps": diff.rows,
        "state": diff,
        "final_answer": diff,
        "figures": diff.figures,
        "cost": diff.cost,
    }
    return dict(RunDiffSerializer(body).data)


def owned_run(request: Request, run_id: Any) -> Run:
    runs = Run.objects.select_related("session__agent_version__agent")
    run = runs.filter(pk=run_id, session__owner_id=request_owner(request).pk).first()
    if run is None:
        raise NotFound("No such run.")
    return run


class RunCompareView(APIView):
    """Two of your runs compared step by step: their steps aligned by agent and kind
    (added, removed, changed, the same), what changed in each as a JSON diff, the state
    each set, their final answers word by word, and their tokens, cost and time side by
    side with the differences (b minus a)."""

    @extend_schema(
        parameters=[CompareQuerySerializer],
        responses={200: RunDiffSerializer, **error_responses(404)},
        operation_id="runs_compare",
    )
    def get(self, request: Request) -> Response:
        query = CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        a = owned_run(request, query.validated_data["a"])
        b = owned_run(request, query.validated_data["b"])
        return Response(diff_payload(a, b, compare_runs(a, b)))
