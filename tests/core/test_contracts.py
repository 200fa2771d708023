"""The value types every layer speaks (``agents_core.contracts``)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agents_core import Usage
from agents_core.events import Event, EventType


def test_usages_add_up_their_cached_input_tokens_too() -> None:
    first = Usage(input_tokens=1_204, output_tokens=88, cached_input_tokens=1_000)
    second = Usage(input_tokens=300, output_tokens=12, cached_input_tokens=200)

    assert first + second == Usage(input_tokens=1_504, output_tokens=100, cached_input_tokens=1_200)
    assert (first + Usage()).cached_input_tokens == 1_000


def test_cached_input_tokens_cannot_exceed_the_input_they_are_part_of() -> None:
    with pytest.raises(
        ValidationError, match=r"cached_input_tokens \(11\) is part of input_tokens"
    ):
        Usage(input_tokens=10, cached_input_tokens=11)


def test_a_stored_event_from_before_cached_tokens_reads_as_none_cached() -> None:
    stored = Event(
        type=EventType.AGENT_MESSAGE, invocation_id="i", session_id="s", author="a"
    ).to_wire()
    stored["usage"] = {"input_tokens": 42, "output_tokens": 7}  # no cached_input_tokens

    event = Event.model_validate(stored)

    assert event.usage == Usage(input_tokens=42, output_tokens=7, cached_input_tokens=0)
    assert event.to_wire()["usage"]["cached_input_tokens"] == 0
