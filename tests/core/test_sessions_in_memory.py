from __future__ import annotations

import pytest

from agents_core.sessions import InMemorySessionService
from tests.core.session_contract import SessionServiceContract


class TestInMemorySessionService(SessionServiceContract):
    @pytest.fixture
    def service(self) -> InMemorySessionService:
        return InMemorySessionService()
