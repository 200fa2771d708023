"""Serializer fields shared by the API's resources."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents_core import specs as core_specs
from studio.costs import PRICE_MAX_DIGITS, PRICE_PLACES
from studio.models import MAX_PER_MINUTE


class NameField(serializers.RegexField):
    """A name agent specs refer to (an agent's, an MCP server's): ``NAME_PATTERN``, and
    one message in words whatever is wrong with it (too long, a character not allowed),
    never a regex."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(
            core_specs.NAME_PATTERN,
            max_length=64,
            error_messages={
                "blank": f"Required. {core_specs.NAME_RULE}",
                "invalid": core_specs.NAME_RULE,
                "max_length": core_specs.NAME_RULE,
            },
            **kwargs,
        )

    def run_validators(self, value: Any) -> None:
        try:
            super().run_validators(value)
        except serializers.ValidationError:
            raise serializers.ValidationError(core_specs.NAME_RULE, code="invalid") from None


PRICE_PATTERN = rf"^\d{{1,{PRICE_MAX_DIGITS - PRICE_PLACES}}}(?:\.\d{{1,{PRICE_PLACES}}})?$"
"""What the schema says a price is: the rules ``PriceField`` checks, nothing looser."""


class RateLimitField(serializers.IntegerField):
    """A model config's limit per minute (``unit``: calls or tokens): a whole number from
    1 to ``MAX_PER_MINUTE``, or null for no limit."""

    def __init__(self, unit: str) -> None:
        super().__init__(
            required=False,
            allow_null=True,
            min_value=1,
            max_value=MAX_PER_MINUTE,
            help_text=f"Most {unit} per minute, shared by all runs of this config; null: no limit.",
            error_messages={
                "min_value": f"a limit of {unit} per minute is at least 1 (null: no limit)",
                "max_value": f"a limit of {unit} per minute is at most {MAX_PER_MINUTE:,}",
                "invalid": f"a limit of {unit} per minute is a whole number (null: no limit)",
            },
        )


@extend_schema_field({"type": "string", "format": "decimal", "pattern": PRICE_PATTERN})
class PriceField(serializers.DecimalField):
    """A price per million tokens: a non-negative decimal (``PRICE_PLACES`` places, up
    to ``PRICE_MAX_DIGITS`` digits), written as a string; null is "not known"."""

    def __init__(self, what: str) -> None:
        super().__init__(
            max_digits=PRICE_MAX_DIGITS,
            decimal_places=PRICE_PLACES,
            min_value=Decimal(0),
            allow_null=True,
            required=False,
            help_text=f'Price of a million {what} tokens, e.g. "2.50"; null: not known.',
        )
