"""The shapes of eval runs in the API and on their websocket (``/ws/evals/<id>/``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from pydantic import TypeAdapter, ValidationError
from rest_framework import serializers

from agents_core.evals.contracts import EvaluatorSpec
from studio.api.serializers import StoredJSONField
from studio.models.evals import MAX_CONCURRENCY, MAX_REPEATS, EvalCaseResult, EvalRun

SPECS: TypeAdapter[list[EvaluatorSpec]] = TypeAdapter(list[EvaluatorSpec])
KINDS = [
    "exact",
    "contains",
    "regex",
    "json_schema",
    "trajectory",
    "limits",
    "state",
    "judge",
    "custom",
]
MAX_EVALUATORS = 20

_SPEC_SCHEMA = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": {"type": "string", "enum": KINDS}},
    "additionalProperties": True,
    "description": "An evaluator spec (see GET /api/evaluators/ for the kinds and fields).",
}


@extend_schema_field({"type": "array", "items": _SPEC_SCHEMA, "maxItems": MAX_EVALUATORS})
class EvaluatorsField(StoredJSONField):
    """A list of ``EvaluatorSpec``, checked by the core's contract."""

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        if not isinstance(value, list) or len(value) > MAX_EVALUATORS:
            raise serializers.ValidationError(
                f"a list of at most {MAX_EVALUATORS} evaluator specs", code="invalid"
            )
        try:
            return SPECS.validate_python(value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise serializers.ValidationError(f"{where}: {first['msg']}", code="invalid") from None


class EvalCreateSerializer(serializers.Serializer[object]):
    agent = serializers.CharField(max_length=64, help_text="The agent's id or name.")
    version = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**31 - 1,
        help_text="The agent's version number; left out: its current version.",
    )
    dataset = serializers.CharField(max_length=64, help_text="The dataset's id or name.")
    dataset_version = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=2**31 - 1,
        help_text="The dataset's version number; left out: its current version.",
    )
    evaluators = EvaluatorsField(
        required=False,
        allow_null=True,
        help_text="Evaluator specs; left out or empty: contains (the expected final "
        "output), trajectory (subset), state and limits, each skipped on a case that "
        "expects nothing it checks.",
    )
    concurrency = serializers.IntegerField(
        required=False, default=4, min_value=1, max_value=MAX_CONCURRENCY
    )
    repeats = serializers.IntegerField(
        required=False, default=1, min_value=1, max_value=MAX_REPEATS
    )


class EvalRunSerializer(serializers.ModelSerializer[EvalRun]):
    agent = serializers.CharField(source="agent_version.agent.name", read_only=True)
    agent_id = serializers.UUIDField(source="agent_version.agent_id", read_only=True)
    agent_version = serializers.IntegerField(source="agent_version.number", read_only=True)
    dataset = serializers.CharField(source="dataset_version.dataset.name", read_only=True)
    dataset_id = serializers.UUIDField(source="dataset_version.dataset_id", read_only=True)
    dataset_version = serializers.IntegerField(source="dataset_version.number", read_only=True)
    evaluators = serializers.JSONField(read_only=True)
    summary = serializers.JSONField(read_only=True)

    class Meta:
        model = EvalRun
        fields = [
            "id",
            "status",
            "agent",
            "agent_id",
            "agent_version",
            "dataset",
            "dataset_id",
            "dataset_version",
            "evaluators",
            "concurrency",
            "repeats",
            "summary",
            "error_message",
            "created_at",
            "started_at",
            "ended_at",
        ]
        read_only_fields = fields


class EvalResultSerializer(serializers.ModelSerializer[EvalCaseResult]):
    verdicts = serializers.JSONField(read_only=True)
    cost = serializers.DecimalField(
        max_digits=20, decimal_places=10, read_only=True, allow_null=True
    )

    class Meta:
        model = EvalCaseResult
        fields = [
            "id",
            "case_index",
            "case_name",
            "repeat",
            "session",
            "status",
            "verdicts",
            "score",
            "cost",
            "tokens",
            "latency_s",
            "steps",
            "turns_sent",
            "resumes",
            "error_message",
            "started_at",
            "ended_at",
        ]
        read_only_fields = fields


def eval_payload(eval_run: EvalRun) -> dict[str, Any]:
    data: dict[str, Any] = EvalRunSerializer(eval_run).data
    return dict(data)


def result_payloads(results: Any) -> list[dict[str, Any]]:
    return [dict(row) for row in EvalResultSerializer(results, many=True).data]


class CaseRateSerializer(serializers.Serializer[object]):
    case_index = serializers.IntegerField()
    case_name = serializers.CharField()
    runs = serializers.IntegerField(help_text="Repeats judged.")
    passed = serializers.IntegerField()
    pass_rate = serializers.FloatField(allow_null=True)


class CaseChangeSerializer(serializers.Serializer[object]):
    case_name = serializers.CharField()
    change = serializers.ChoiceField(
        choices=["regression", "improvement", "unchanged", "only_a", "only_b"]
    )
    a = CaseRateSerializer(allow_null=True)
    b = CaseRateSerializer(allow_null=True)


class DeltaSerializer(serializers.Serializer[object]):
    pass_rate = serializers.FloatField(allow_null=True)
    cost = serializers.CharField(allow_null=True, help_text="A decimal, b - a.")
    latency_p50_s = serializers.FloatField(allow_null=True)


class CompareSerializer(serializers.Serializer[object]):
    a = serializers.JSONField(help_text="a's summary.")
    b = serializers.JSONField(help_text="b's summary.")
    cases = CaseChangeSerializer(many=True)
    delta = DeltaSerializer()


class HistoryPointSerializer(serializers.Serializer[object]):
    eval_run = serializers.UUIDField()
    agent = serializers.CharField()
    agent_version = serializers.IntegerField()
    dataset = serializers.CharField()
    dataset_version = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    pass_rate = serializers.FloatField(allow_null=True)
    cost = serializers.CharField(allow_null=True)
    latency_p50_s = serializers.FloatField(allow_null=True)
    latency_p95_s = serializers.FloatField(allow_null=True)


class EvaluatorParamSerializer(serializers.Serializer[object]):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    default = serializers.JSONField(help_text="Its value when not given (null when required).")

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        # `required` is a field's own attribute in DRF: declared here, it is added
        # by name rather than as a class attribute that would shadow it.
        fields = super().get_fields()
        fields["required"] = serializers.BooleanField()
        return fields


class EvaluatorKindSerializer(serializers.Serializer[object]):
    kind = serializers.CharField()
    name = serializers.CharField(help_text="The kind, or a custom evaluator's name.")
    description = serializers.CharField()
    builtin = serializers.BooleanField()
    params = EvaluatorParamSerializer(
        many=True,
        allow_null=True,
        help_text="The parameters a custom evaluator takes in its spec's `params`; null when "
        "it declares none (it takes any). A built-in kind's fields are the spec's own.",
    )
