"""What a model call derives from the history once and reuses (LangChain messages, the
prompt-size estimate) must equal what a fresh conversion of the same messages gives,
however the history changed in between."""

from __future__ import annotations

from langchain_core.messages import AIMessage

from agents_core.events import (
    CompactionRange,
    Event,
    EventActions,
    EventType,
    FilePart,
    TextPart,
)
from agents_core.history import HistoryBuilder
from agents_core.llm.contracts import (
    ChatMessage,
    LlmRequest,
    MessageLog,
    ToolSchema,
    estimate_prompt_tokens,
)
from agents_core.llm.langchain import to_langchain_messages
from agents_core.tools.function import FunctionTool
from tests.core.test_history import AGENT, answers, calls, event, says, user
from tests.core.test_llm_langchain import WholeAnswerChatModel, whole_answer_model


def request_of(
    builder: HistoryBuilder, invocation: str | None = None, asked: str | None = None
) -> LlmRequest:
    view = builder.messages(invocation, asked)
    return LlmRequest.model_construct(system_instruction="Be brief.", messages=view, tools=[])


def fresh(request: LlmRequest) -> LlmRequest:
    """The same request with its messages as a plain list: converted with no reuse."""
    return LlmRequest(
        system_instruction=request.system_instruction, messages=list(request.messages)
    )


def assert_same_as_fresh(request: LlmRequest) -> None:
    assert to_langchain_messages(request) == to_langchain_messages(fresh(request))
    assert estimate_prompt_tokens(request) == estimate_prompt_tokens(fresh(request))
    assert request.attachments == fresh(request).attachments


def test_reused_conversions_equal_a_fresh_conversion_at_every_step_of_a_growing_history() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000)
    steps = [
        user("q1"),
        calls("c1", "c2"),  # both open: the view answers them with markers
        answers("c1", "r1"),
        event(EventType.AGENT_MESSAGE, TextPart(text="from a peer"), author="peer"),  # held
        answers("c2", "r2" * 50),
        says("a1"),
        user("q2"),
        calls("c3"),
        answers("c3", "r3"),
    ]
    events: list[Event] = []
    for step in steps:
        events.append(step)
        builder.update(events)
        assert_same_as_fresh(request_of(builder))
        assert_same_as_fresh(request_of(builder, "inv", "the step's input"))  # a split view


def test_a_requests_attachments_are_every_file_of_its_messages_in_order_at_every_step() -> None:
    """Counted on the log (a stretch without files is not walked), found as a walk of
    every message finds them: files early in the log, in a later message, in the turn
    input's split view and in the tail of held context."""
    builder = HistoryBuilder(AGENT, AGENT, 1_000)

    def with_files(text: str, *names: str) -> Event:
        files = [
            FilePart(blob_id=f"{i:064x}", content_type="image/png", size=1, name=name)
            for i, name in enumerate(names, start=1)
        ]
        return event(EventType.USER_MESSAGE, TextPart(text=text), *files, author="user")

    steps = [
        user("q0"),
        with_files("look", "a.png", "b.png"),
        says("seen"),
        user("q1"),
        calls("c1"),
        event(EventType.AGENT_MESSAGE, TextPart(text="from a peer"), author="peer"),  # held
        answers("c1", "r1"),
        with_files("and this", "c.png"),
        says("a1"),
        user("q2"),
    ]
    events: list[Event] = []
    names = []
    for step in steps:
        events.append(step)
        builder.update(events)
        for request in (request_of(builder), request_of(builder, "inv", "asked apart")):
            assert_same_as_fresh(request)
            names.append([a.name for a in request.attachments])
    assert names[-1] == ["a.png", "b.png", "c.png"]
    assert names[0] == []


def test_each_message_is_converted_once_and_the_same_object_handed_out_again() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000)
    events = [user("q1"), says("a1")]
    first = to_langchain_messages(request_of(builder.update(events)))
    events += [user("q2"), says("a2")]
    second = to_langchain_messages(request_of(builder.update(events)))

    assert [m.content for m in second] == ["Be brief.", "q1", "a1", "q2", "a2"]
    assert second[1] is first[1] and second[2] is first[2]


def test_a_compaction_starts_the_conversion_over_from_its_summary() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000)
    events = [
        user("q1").model_copy(update={"seq": 1}),
        says("a1").model_copy(update={"seq": 2}),
        user("q2").model_copy(update={"seq": 3}),
    ]
    before = to_langchain_messages(request_of(builder.update(events)))
    summary = event(
        EventType.COMPACTION,
        TextPart(text="they asked twice"),
        seq=4,
        actions=EventActions(compaction=CompactionRange(start_seq=1, end_seq=2)),
    )
    events += [summary, says("a2").model_copy(update={"seq": 5})]
    request = request_of(builder.update(events))
    after = to_langchain_messages(request)

    assert_same_as_fresh(request)
    assert [m.content for m in after][2:] == ["q2", "a2"]
    assert "they asked twice" in str(after[1].content)
    assert not {id(m) for m in after[1:]} & {id(m) for m in before}


def test_a_history_that_does_not_continue_is_built_and_converted_afresh() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000)
    events = [user("q1"), says("a1")]
    to_langchain_messages(request_of(builder.update(events)))
    edited = [user("q1"), says("a different answer")]
    assert not builder.continues(edited)

    rebuilt = HistoryBuilder(AGENT, AGENT, 1_000).update(edited)
    converted = to_langchain_messages(request_of(rebuilt))

    assert [m.content for m in converted] == ["Be brief.", "q1", "a different answer"]


def test_a_message_log_derives_each_message_once_with_the_items_before_it() -> None:
    log = MessageLog([ChatMessage(role="user", text="a"), ChatMessage(role="user", text="bb")])
    seen: list[str] = []

    def running(done: list[int], message: ChatMessage) -> int:
        seen.append(message.text)
        return (done[-1] if done else 0) + len(message.text)

    assert log.derive("sizes", running, 2) == [1, 3]
    log.append(ChatMessage(role="user", text="ccc"))
    assert log.derive("sizes", running, 3) == [1, 3, 6]
    assert log.derive("sizes", running, 1) == [1, 3, 6]
    assert seen == ["a", "bb", "ccc"]
    assert log.derive("other", running, 1) == [1]


async def test_each_call_is_given_its_own_requests_tools_though_a_binding_is_reused() -> None:
    model = whole_answer_model(*(AIMessage(f"answer {n}") for n in range(4)))
    one = ToolSchema(name="one", description="", parameters={"type": "object"})
    two = ToolSchema(name="two", description="", parameters={"type": "object"})
    for tools in ([one], [one], [one, two], [two]):
        request = LlmRequest(messages=[ChatMessage(role="user", text="hi")], tools=tools)
        [_ async for _ in model.astream(request)]

    chat = model.chat_model
    assert isinstance(chat, WholeAnswerChatModel)
    given = [[t["function"]["name"] for t in tools] for tools in chat.tools_given]
    assert given == [["one"], ["one"], ["one", "two"], ["two"]]


def test_a_function_tools_schema_is_made_once_and_again_when_it_is_renamed() -> None:
    async def lookup(city: str) -> str:
        """Look a city up."""
        return city

    tool = FunctionTool(lookup)
    first = tool.schema()
    assert tool.schema() is first
    tool.name = "find"
    assert tool.schema().name == "find"
