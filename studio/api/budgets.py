"""``GET /api/budget/``: the user's own daily budget and today's spend under it (a
user cannot change theirs). ``GET`` / ``PUT /api/users/<id>/budget/``: staff read and
set any user's, as in the admin."""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.validators import MinValueValidator
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import services
from studio.costs import MAX_DIGITS, PLACES
from studio.models.budgets import BUDGET_MAX_DIGITS, BUDGET_PLACES

SMALLEST = Decimal(1).scaleb(-BUDGET_PLACES)


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


class SetUserBudgetSerializer(serializers.Serializer[object]):
    """A user's daily budget; ``null`` (or left out) lifts that limit."""

    day_cost = serializers.DecimalField(
        max_digits=BUDGET_MAX_DIGITS,
        decimal_places=BUDGET_PLACES,
        allow_null=True,
        required=False,
        default=None,
        validators=[MinValueValidator(SMALLEST)],
        help_text="Most the user's model calls may cost per UTC day, in USD.",
    )
    day_tokens = serializers.IntegerField(
        allow_null=True,
        required=False,
        default=None,
        min_value=1,
        help_text="Most tokens (input and output) the user's model calls may use per UTC day.",
    )


class StaffUserBudgetView(APIView):
    """Any user's daily budget and today's spend under it; staff only."""

    permission_classes = [IsAdminUser]

    @extend_schema(responses=UserBudgetSerializer)
    def get(self, request: Request, user_id: int) -> Response:
        user = get_object_or_404(get_user_model(), pk=user_id)
        return Response(UserBudgetSerializer(asdict(services.user_budget(user.pk))).data)

    @extend_schema(request=SetUserBudgetSerializer, responses=UserBudgetSerializer)
    def put(self, request: Request, user_id: int) -> Response:
        user = get_object_or_404(get_user_model(), pk=user_id)
        wanted = SetUserBudgetSerializer(data=request.data)
        wanted.is_valid(raise_exception=True)
        services.set_user_budget(user.pk, **wanted.validated_data)
        return Response(UserBudgetSerializer(asdict(services.user_budget(user.pk))).data)
