"""tests/core never imports Django: agents_core must work without it."""

from __future__ import annotations

import pytest

from agents_core import InMemorySessionService
from agents_core.llm.resilience import BreakerRegistry


@pytest.fixture
def sessions() -> InMemorySessionService:
    return InMemorySessionService()


@pytest.fixture
def breakers() -> BreakerRegistry:
    """A private breaker registry, so one test's failures never open another's circuit."""
    return BreakerRegistry()
