"""Fixtures for the security suite. Unlike tests/studio, nothing here allowlists
loopback for outbound requests: each test says what the deployment admits, starting
from nothing (the scaled-out and production default; the embedded default's loopback
is tested in a subprocess of its own, test_outbound_defaults)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.studio.conftest import _fast_password_hashing, ada, api, bob, staff
from tests.support.openai_server import openai_server

__all__ = ["_fast_password_hashing", "ada", "api", "bob", "openai_server", "staff"]


@pytest.fixture(autouse=True)
def _admit_no_private_address(settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    settings.STUDIO_OUTBOUND_LOOPBACK_BY_DEFAULT = False
