"""Files attached to a user message: the event holds a reference, the runner reads the
bytes from its blob store and hands them to a model that takes them; a model that
does not is refused with a terminal error, nothing sent. Thinking streams apart."""

from __future__ import annotations

import pytest

from agents_core import EventType, InMemorySessionService, LlmAgent, ScriptedModel
from agents_core.blobs import InMemoryBlobStore, blob_id_of
from agents_core.contracts import Usage
from agents_core.events import Event, FilePart, ThinkingPart, user_message
from agents_core.llm import ScriptedResponse
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import reply
from tests.core.run_helpers import APP, SESSION, USER, complete, make_runner
from tests.support.images import png


async def _turn_with_file(
    sessions: InMemorySessionService, runner_blobs: InMemoryBlobStore | None, model: ScriptedModel
) -> tuple[list[Event], FilePart]:
    image = png()
    blobs = InMemoryBlobStore()
    blob_id = blobs.put(image)
    part = FilePart(blob_id=blob_id, content_type="image/png", size=len(image), name="red.png")
    session = await sessions.create_session(app_name=APP, user_id=USER, session_id=SESSION)
    said = await sessions.append_event(
        session, user_message(SESSION, "what is this?", files=[part])
    )
    runner = make_runner(
        LlmAgent("eye", model=model), sessions, BreakerRegistry(), blobs=runner_blobs or blobs
    )
    events = [e async for e in runner.astream(user_id=USER, session_id=SESSION, message=said)]
    return events, part


async def test_an_attached_image_reaches_the_model_with_its_bytes(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel([reply("a red square")])

    events, part = await _turn_with_file(sessions, None, model)

    (request,) = model.requests
    (message,) = request.messages
    ((attachment),) = message.attachments
    assert (attachment.blob_id, attachment.content_type, attachment.name) == (
        part.blob_id,
        "image/png",
        "red.png",
    )
    assert request.blobs == {part.blob_id: png()}
    assert blob_id_of(png()) == part.blob_id
    assert complete(events)[-2].text == "a red square"


async def test_a_model_that_takes_no_attachments_ends_the_turn_with_a_clear_error(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel([reply("never said")], takes_attachments=False)

    events, _ = await _turn_with_file(sessions, None, model)

    assert model.requests == []
    (error,) = [e for e in events if e.type is EventType.ERROR]
    assert error.error is not None and error.error.terminal
    assert error.error.code == "configuration_error"
    assert "does not accept images or files" in error.error.message


async def test_a_file_missing_from_the_blob_store_is_a_clear_error(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel([reply("never said")])

    events, part = await _turn_with_file(sessions, InMemoryBlobStore(), model)

    (error,) = [e for e in events if e.type is EventType.ERROR]
    assert error.error is not None and part.blob_id in error.error.message
    assert model.requests == []


def test_the_file_reference_round_trips_on_the_wire_without_the_bytes() -> None:
    part = FilePart(blob_id="a" * 64, content_type="image/png", size=12, name="x.png")
    event = user_message("s", "look", files=[part])

    wire = event.to_wire()

    assert wire["parts"][1] == {
        "kind": "file",
        "blob_id": "a" * 64,
        "content_type": "image/png",
        "size": 12,
        "name": "x.png",
    }
    assert Event.model_validate(wire) == event


@pytest.mark.parametrize("blob_id", ["../etc/passwd", "A" * 64, "a" * 63])
def test_a_file_reference_names_only_a_sha256(blob_id: str) -> None:
    with pytest.raises(ValueError, match="blob_id"):
        FilePart(blob_id=blob_id, content_type="image/png", size=1)


def test_usage_stored_before_reasoning_tokens_reads_as_zero_and_sums() -> None:
    old = Usage.model_validate({"input_tokens": 5, "output_tokens": 9})

    assert old.reasoning_tokens == 0
    assert (old + Usage(output_tokens=4, reasoning_tokens=3)).reasoning_tokens == 3


async def test_thinking_streams_as_partial_thinking_and_is_stored_with_the_answer(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([ScriptedResponse(text="four", thinking="2 and 2 make 4")])
    runner = make_runner(LlmAgent("calc", model=model), sessions, breakers)

    events = [e async for e in runner.astream(user_id=USER, session_id=SESSION, message="2+2")]

    first = next(e for e in events if e.partial)
    assert first.parts == [ThinkingPart(text="2 and 2 make 4")]
    answer = complete(events)[-2]
    assert [p.kind for p in answer.parts] == ["thinking", "text"]


def test_a_request_without_the_bytes_of_its_files_names_them_instead() -> None:
    from agents_core.llm.contracts import Attachment, ChatMessage, LlmRequest
    from agents_core.llm.langchain import to_langchain_messages

    picture = Attachment(blob_id="b" * 64, content_type="image/png", name="red.png")
    request = LlmRequest(messages=[ChatMessage(role="user", text="hi", attachments=[picture])])

    (message,) = to_langchain_messages(request)

    assert message.content == [
        {"type": "text", "text": "hi"},
        {"type": "text", "text": "[attached image/png file 'red.png']"},
    ]
