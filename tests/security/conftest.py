"""Fixtures for the security suite. Unlike tests/studio, nothing here allowlists
loopback for outbound requests: each test says what the deployment admits, starting
from nothing (the scaled-out and production default; the embedded default's loopback
is tested in a subprocess of its own, test_outbound_defaults)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.studio.conftest import _fast_password_hashing, ada, api, bob, staff
from tests.support.openai_server import openai_server

__all__ = ["_fast_password_hashing", "ada", "api", "bob", "openai_server", "staff"]


@pytest.fixture(autouse=True)
def _admit_no_private_address(settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    settings.STUDIO_OUTBOUND_LOOPBACK_BY_DEFAULT = False


LONGEST_FOLDED = 5_000
"""The longest text whose ``maxLength`` schemathesis may spell into its pattern."""


@pytest.fixture(scope="module")
def long_texts_unfolded() -> Iterator[None]:
    """schemathesis folds a string's ``maxLength`` into its pattern, so that the values it
    draws have the length already: ``^[^\\x00]*$`` with ``maxLength: 50000`` becomes
    ``^[^\\x00]{0,50000}$``. Its Rust regex engine unrolls a counted repetition, so each
    such pattern then costs ~0.6 s to compile into a validator (~0.05 s at 5,000), and the
    API fuzz compiles dozens: a message's text and a prompt template's source (50,000),
    a fork's edited message (100,000) made up ~70% of the time it spent drawing its
    first examples (all operations, 20 examples each, no request sent: 32 -> 9.6 s).
    Above ``LONGEST_FOLDED`` the pattern stays as the API states it; schemathesis keeps
    the ``maxLength`` beside it and filters what it draws by length, so every request
    sent is as schema-valid as before. schemathesis is pinned (requirements.lock); if
    it renames the function, this fails at set-up rather than turning silently slow."""
    from schemathesis.core.jsonschema import patterns
    from schemathesis.generation.jsonschema import strategy
    from schemathesis.specs.openapi import converter

    fold = patterns.update_quantifier

    def fold_short(pattern: str, min_length: int | None, max_length: int | None) -> str:
        if max_length is not None and max_length > LONGEST_FOLDED:
            return pattern
        return fold(pattern, min_length, max_length)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(strategy, "update_quantifier", fold_short)
        patch.setattr(converter, "update_quantifier", fold_short)
        yield
