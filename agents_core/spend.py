"""A guard on what model calls may spend, checked before each call.

The core knows no prices and no store: it tells a ``SpendGuard`` (given to the
``Runner``) the worst case of the call it is about to make (a ``CallEstimate``: the
prompt's estimated tokens and the most the model may answer), and the guard either
refuses it, raising ``BudgetExceededError`` (the run ends with a terminal
``budget_exceeded`` error event; the model is not called), or holds that worst case
back and returns a ``SpendHold``. Once the call is over the hold is settled with the
call's actual usage, or with ``None`` when it failed or was cancelled without one, so
whatever was held and not spent is released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agents_core.contracts import Usage


@dataclass(frozen=True, slots=True)
class CallEstimate:
    """The worst case of one model call, known before it is made."""

    agent: str
    """The calling agent's name (unique in its tree)."""
    provider_key: str
    prompt_tokens: int
    """Estimated (``estimate_prompt_tokens``)."""
    max_output_tokens: int | None
    """The longest answer the model says it may give; ``None`` when it does not say."""


class SpendHold(Protocol):
    """What a guard held back for one call."""

    async def settle(self, usage: Usage | None) -> None:
        """The call is over: ``usage`` is what it used (``None`` if unknown)."""
        ...


class SpendGuard(Protocol):
    """Decides, before each model call of a run, whether it may be made."""

    async def reserve(self, estimate: CallEstimate) -> SpendHold:
        """Hold back ``estimate``'s worst case, or raise ``BudgetExceededError``."""
        ...
