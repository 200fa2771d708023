"""``GET /api/costs/``: what model calls cost, added up per run, session, agent, agent
version, tool, model, user or day over a date range (``studio.rollups``).

Owner-scoped like every other read: each user adds up their own sessions' calls. Only
staff may group by ``user``, and then across every user (that grouping is for them).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import costs
from studio.api.schema import error_responses
from studio.rollups import days
from studio.rollups.queries import GroupBy, RollUp, model_calls, roll_up

MAX_ROWS = 1_000
"""A roll-up answers its costliest rows, at most this many (``truncated`` says so)."""
STAFF_ONLY = "Only staff may add up costs per user."


class CostQuerySerializer(serializers.Serializer[Any]):
    """What to add up: ``group_by`` one key, over the UTC days ``from`` to ``to``. A
    ``to`` before ``from`` is an empty range (no rows), not an error: a schema cannot
    state that rule, and a request it calls valid is answered."""

    group_by = serializers.ChoiceField(choices=[g.value for g in GroupBy])

    def get_fields(self) -> dict[str, serializers.Field[Any, Any, Any, Any]]:
        fields = super().get_fields()  # "from" is a keyword: no class attribute can say it
        fields["from"] = serializers.DateField(
            required=False, help_text="The first day (UTC), included; empty: from the start."
        )
        fields["to"] = serializers.DateField(
            required=False, help_text="The last day (UTC), included; empty: up to today."
        )
        return fields


class CostRowSerializer(serializers.Serializer[RollUp]):
    """The model calls of one key in one currency."""

    key = serializers.CharField(
        allow_null=True,
        help_text="The run's, session's, agent version's or user's id, the agent's, tool's "
        "or model's name, or the day; `null`: none (a call made by the run's own agents, "
        "for `tool`; not attributed yet, for `run`, `model`).",
    )
    name = serializers.CharField(
        source="label",
        allow_null=True,
        help_text="A run's message, session's title, version's number, user's name.",
    )
    currency = serializers.CharField(
        allow_null=True, help_text="ISO 4217; `null`: the calls whose cost is unknown."
    )
    cost = serializers.DecimalField(
        max_digits=None,
        decimal_places=costs.PLACES,
        allow_null=True,
        help_text="The exact sum of the calls' stored costs; `null` when unknown.",
    )
    calls = serializers.IntegerField(min_value=0)
    input_tokens = serializers.IntegerField(min_value=0)
    output_tokens = serializers.IntegerField(min_value=0)


class CostsSerializer(serializers.Serializer[Any]):
    group_by = serializers.ChoiceField(choices=[g.value for g in GroupBy])
    rows = CostRowSerializer(many=True, help_text="The costliest first.")
    truncated = serializers.BooleanField(help_text=f"More than {MAX_ROWS} rows: the rest left out.")


class CostsView(APIView):
    """What your model calls cost, added up per run, session, agent, agent version, tool
    (the tool call that led to them: an agent called as a tool, or a transfer), model,
    user (staff only: every user's) or day, over a range of days."""

    @extend_schema(
        parameters=[CostQuerySerializer],
        responses={200: CostsSerializer, **error_responses(403)},
    )
    def get(self, request: Request) -> Response:
        query = CostQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        group_by = GroupBy(query.validated_data["group_by"])
        if group_by is GroupBy.USER and not request.user.is_staff:
            raise exceptions.PermissionDenied(STAFF_ONLY, code="staff_only")
        start: date | None = query.validated_data.get("from")
        end: date | None = query.validated_data.get("to")
        if group_by is GroupBy.USER:  # every user's: from the day totals, not every call
            rows = days.per_user(start, end, limit=MAX_ROWS + 1)
        else:
            calls = model_calls(request.user.pk, start=start, end=end)
            rows = roll_up(calls, group_by, limit=MAX_ROWS + 1)
        body = {"group_by": group_by, "rows": rows[:MAX_ROWS], "truncated": len(rows) > MAX_ROWS}
        return Response(CostsSerializer(body).data)
