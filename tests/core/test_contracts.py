"""The value types every layer speaks (``agents_core.contracts``)."""

from __future__ import annotations

import sys

import pytest
from pydantic import BaseModel, PrivateAttr, ValidationError

from agents_core import InMemorySessionService, Usage
from agents_core.contracts import built, compact_model, replaced
from agents_core.events import NO_ACTIONS, Event, EventType, TextPart, built_event, utc_now


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


def test_built_event_equals_the_validated_event_with_the_same_values() -> None:
    values = {
        "id": "e1",
        "type": EventType.AGENT_MESSAGE,
        "invocation_id": "i",
        "session_id": "s",
        "author": "a",
        "branch": "a",
        "parts": [TextPart(text="hi")],
        "actions": NO_ACTIONS,
        "usage": Usage(input_tokens=3, output_tokens=1),
        "latency_ms": 1.5,
        "created_at": utc_now(),
    }
    fast, checked = built_event(**values), Event(**values)
    assert fast == checked
    assert fast.to_wire() == checked.to_wire()
    assert fast.model_fields_set == checked.model_fields_set
    assert list(fast.__dict__) == list(checked.__dict__)  # field order, for repr
    stored = fast.model_copy(update={"seq": 1})
    assert stored.seq == 1 and fast.seq is None
    assert built(Event, **values) == checked


def test_built_events_share_their_fields_set_and_a_copy_does_not_change_it() -> None:
    first = built_event(type=EventType.AGENT_START, invocation_id="i", session_id="s", author="a")
    second = built_event(type=EventType.AGENT_START, invocation_id="j", session_id="s", author="b")
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    stored = first.model_copy(update={"seq": 1})
    assert stored.model_fields_set == {"type", "invocation_id", "session_id", "author", "seq"}
    assert first.model_fields_set == {"type", "invocation_id", "session_id", "author"}
    assert second.model_fields_set == first.model_fields_set
    with pytest.raises(ValidationError):
        first.seq = 2  # type: ignore[misc]  # frozen: nothing can add to the shared set
    assert "seq" not in second.model_fields_set


def test_replaced_is_model_copy_with_an_update() -> None:
    checked = Event(
        type=EventType.USER_MESSAGE,
        invocation_id="i",
        session_id="s",
        author="user",
        parts=[TextPart(text="hi")],
    )
    fast = replaced(checked, seq=4, session_id="t")
    slow = checked.model_copy(update={"seq": 4, "session_id": "t"})
    assert fast == slow and fast.to_wire() == slow.to_wire()
    assert fast.model_fields_set == slow.model_fields_set
    assert list(fast.__dict__) == list(slow.__dict__)
    assert checked.seq is None and checked.session_id == "s"
    assert replaced(checked, seq=5).__pydantic_fields_set__ is not checked.model_fields_set


def test_built_fills_defaults_and_makes_a_fresh_value_for_each_factory() -> None:
    values = {"type": EventType.AGENT_START, "invocation_id": "i", "session_id": "s"}
    first, second = built(Event, **values, author="a"), built(Event, **values, author="a")
    assert first.id != second.id
    assert first.parts == [] and first.parts is not second.parts
    assert first.seq is None and first.partial is False and first.schema_version == 2


def test_built_models_that_are_not_frozen_each_keep_a_fields_set_of_their_own() -> None:
    class Draft(BaseModel):
        title: str = ""
        body: str = ""

    first, second = built(Draft, title="a"), built(Draft, title="b")
    first.body = "changed"  # assignment adds to the instance's set: it must be its own
    assert first.model_fields_set == {"title", "body"}
    assert second.model_fields_set == {"title"}


def test_built_refuses_a_model_with_private_attributes() -> None:
    class Held(BaseModel):
        value: int = 0
        _cache: dict[str, int] = PrivateAttr(default_factory=dict)

    with pytest.raises(TypeError):
        built(Held, value=1)


def test_built_events_without_parts_or_hooks_share_one_empty_list_that_refuses_changes() -> None:
    start = built_event(type=EventType.AGENT_START, invocation_id="i", session_id="s", author="a")
    end = built_event(type=EventType.AGENT_END, invocation_id="i", session_id="s", author="a")
    assert start.parts is end.parts and start.hooks is end.parts
    assert start.parts == [] and start.to_wire()["parts"] == [] and start.to_wire()["hooks"] == []
    assert Event.model_validate(start.to_wire()) == start
    for change in (
        lambda: start.parts.append(TextPart(text="x")),
        lambda: start.hooks.extend([]),
        lambda: start.parts.__setitem__(slice(0, 0), [TextPart(text="x")]),
    ):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert end.parts == [] and start.model_fields_set == end.model_fields_set
    assert "parts" not in start.model_fields_set
    spoken = built_event(
        type=EventType.AGENT_MESSAGE,
        invocation_id="i",
        session_id="s",
        author="a",
        parts=[TextPart(text="hi")],
    )
    assert spoken.parts == [TextPart(text="hi")] and spoken.hooks is start.hooks


def _hello(session_id: str = "s") -> Event:
    """An agent's message with a part and a usage: contracts nested in a list and alone."""
    return Event(
        type=EventType.AGENT_MESSAGE,
        invocation_id="inv",
        session_id=session_id,
        author="agent",
        parts=[TextPart(text="hello")],
        usage=Usage(input_tokens=3, output_tokens=1),
    )


def test_events_loaded_from_their_wire_form_share_their_fields_sets_and_stay_equal() -> None:
    wire = _hello().model_dump_json()
    first, second = Event.model_validate_json(wire), Event.model_validate_json(wire)
    assert first.__pydantic_fields_set__ is not second.__pydantic_fields_set__

    compact_model(first)
    compact_model(second)

    assert first == second == Event.model_validate_json(wire)
    assert first.model_dump(exclude_unset=True) == Event.model_validate_json(wire).model_dump(
        exclude_unset=True
    )
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first.parts[0].__pydantic_fields_set__ is second.parts[0].__pydantic_fields_set__
    assert first.usage is not None and second.usage is not None
    assert first.usage.__pydantic_fields_set__ is second.usage.__pydantic_fields_set__
    assert first.model_copy(update={"seq": 4}).model_fields_set >= {"seq", "parts"}
    assert first.__pydantic_fields_set__ == set(Event.model_fields)


def test_sharing_fields_sets_leaves_models_that_are_not_frozen_alone() -> None:
    class Mutable(BaseModel):
        value: int = 0

    model = Mutable(value=1)
    own = model.__pydantic_fields_set__
    compact_model(model)
    assert model.__pydantic_fields_set__ is own


def _dict_bytes(model: BaseModel) -> int:
    return sys.getsizeof(model.__dict__)


async def test_a_stored_event_keeps_its_fields_in_a_key_sharing_dict_and_stays_equal(
    sessions: InMemorySessionService,
) -> None:
    session = await sessions.create_session(app_name="app", user_id="u")
    made = _hello(session.id)

    stored = await sessions.append_event(session, made)

    assert _dict_bytes(stored) < _dict_bytes(made) / 2  # 296 bytes, where 832
    assert stored.seq == 1 and stored.model_copy(update={"seq": None}) == made
    assert stored.to_wire() == {**made.to_wire(), "seq": 1}
    assert Event.model_validate(stored.to_wire()) == stored


def test_compacting_a_loaded_event_shrinks_its_dicts_and_keeps_it_equal() -> None:
    wire = _hello().model_dump_json()
    loaded = Event.model_validate_json(wire)
    before = _dict_bytes(loaded), _dict_bytes(loaded.parts[0])

    compact_model(loaded)

    assert _dict_bytes(loaded) < before[0] / 2
    assert _dict_bytes(loaded.parts[0]) <= before[1]  # two fields: a plain dict is smaller
    assert loaded == Event.model_validate_json(wire) and loaded.model_dump_json() == wire
