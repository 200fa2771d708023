"""Fixtures for the security suite. Unlike tests/studio, nothing here allowlists
loopback for outbound requests: each test says what the deployment admits."""

from __future__ import annotations

from tests.studio.conftest import _clear_cache, _fast_password_hashing, ada, api, bob, staff
from tests.support.openai_server import openai_server

__all__ = ["_clear_cache", "_fast_password_hashing", "ada", "api", "bob", "openai_server", "staff"]
