"""``GET /api/budget/``: the user's own daily budget and today's spend under it.
Staff set budgets in the admin; a user cannot change theirs."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import services
from studio.costs import MAX_DIGITS, PLACES
from studio.models.budgets import BUDGET_MAX_DIGITS, BUDGET_PLACES


def _cost(*, limit: bool = False) -> serializers.DecimalField:
    digits, places = (BUDGET_MAX_DIGITS, BUDGET_PLACES) if limit else (MAX_DIGITS, PLACES)
    return serializers.DecimalField(max_digits=digits, decimal_places=places, allow_null=limit)


class UserBudgetSerializer(serializers.Serializer[object]):
    """A user's daily budget (``null``: no limit), in ``currency``, and today's spend
    under it (counted while a limit is set); ``reserved`` is held by calls in flight."""

    day = serializers.DateField(help_text="Today, in UTC: when the daily budgets reset.")
    day_cost = _cost(limit=True)
    day_tokens = serializers.IntegerField(allow_null=True)
    cost_spent = _cost()
    cost_reserved = _cost()
    tokens_spent = serializers.IntegerField()
    tokens_reserved = serializers.IntegerField()
    currency = serializers.CharField()


class UserBudgetView(APIView):
    """Your daily budget and what your runs spent under it today."""

    @extend_schema(responses=UserBudgetSerializer)
    def get(self, request: Request) -> Response:
        today = services.user_budget(request.user.pk)
        return Response(UserBudgetSerializer(asdict(today)).data)
