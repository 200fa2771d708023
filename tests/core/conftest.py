"""tests/core never imports Django: agents_core must work without it."""

from __future__ import annotations

import pytest

from agents_core import InMemorySessionService
from agents_core.llm.resilience import BreakerRegistry
from tests.support.openai_server import loopback_http_clients as loopback_http_clients
from tests.support.openai_server import openai_server as openai_server


@pytest.fixture
def sessions() -> InMemorySessionService:
    return InMemorySessionService()


@pytest.fixture
def breakers() -> BreakerRegistry:
    """A private breaker registry, so one test's failures never open another's circuit."""
    return BreakerRegistry()
