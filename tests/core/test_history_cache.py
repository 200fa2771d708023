"""``HistoryCache``: agents built afresh for each turn that share one take a session's
history up where the last left it, never serve one user's history to another, and keep
no more than their bounds."""

from __future__ import annotations

import pytest

from agents_core import InMemorySessionService, LlmAgent, Runner
from agents_core.history import HistoryBuilder, HistoryCache
from agents_core.llm.contracts import ChatMessage
from agents_core.llm.resilience import BreakerRegistry
from agents_core.sessions.base import Session
from agents_core.testing import ScriptedModel, collect, reply
from tests.core.test_history import AGENT, says, user


def _runner(cache: HistoryCache, sessions: InMemorySessionService) -> tuple[Runner, ScriptedModel]:
    """A runner on a new agent, as Studio builds one for every run."""
    model = ScriptedModel([reply("noted")], loop=True)
    agent = LlmAgent("assistant", model=model, histories=cache)
    return Runner(agent, session_service=sessions, breakers=BreakerRegistry()), model


def _said(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]


async def test_an_agent_built_for_the_next_turn_converts_only_the_new_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fed: list[int | None] = []
    feed = HistoryBuilder._feed
    monkeypatch.setattr(
        HistoryBuilder, "_feed", lambda self, event: (fed.append(event.seq), feed(self, event))
    )
    cache, sessions = HistoryCache(), InMemorySessionService()
    first, _ = _runner(cache, sessions)
    turn_one = await collect(first.astream(user_id="ada", session_id="s", message="one"))
    fed.clear()

    second, model = _runner(cache, sessions)
    await collect(second.astream(user_id="ada", session_id="s", message="two"))

    # Turn one stored 1-4 (message, agent start, answer, agent end); its model call
    # converted 1-2. Turn two converts the rest and its own message and start (5-6),
    # where an agent with a builder of its own would convert 1-6.
    assert [e.seq for e in turn_one] == [1, 2, 3, 4]
    assert fed == [3, 4, 5, 6]
    assert _said(list(model.requests[0].messages)) == [
        ("user", "one"),
        ("assistant", "noted"),
        ("user", "two"),
    ]
    assert len(cache) == 1


async def test_one_users_history_never_serves_another_users_session_of_the_same_id() -> None:
    cache = HistoryCache()  # two stores that both hold a session "s": one is ada's
    ada, _ = _runner(cache, InMemorySessionService())
    await collect(ada.astream(user_id="ada", session_id="s", message="ada's secret"))

    bob, model = _runner(cache, InMemorySessionService())
    await collect(bob.astream(user_id="bob", session_id="s", message="hello"))

    assert _said(list(model.requests[0].messages)) == [("user", "hello")]
    assert len(cache) == 2


def _session(session_id: str, turns: int) -> Session:
    events = []
    for n in range(turns):
        events += [user(f"question {n}"), says(f"answer {n}")]
    for seq, event in enumerate(events, start=1):
        events[seq - 1] = event.model_copy(update={"seq": seq})
    return Session(id=session_id, app_name="app", user_id="ada", events=events)


def test_the_cache_keeps_at_most_its_builders_and_messages_least_recently_used_first() -> None:
    cache = HistoryCache(max_builders=2, max_messages=10)
    a, b, c = _session("a", 2), _session("b", 2), _session("c", 2)  # 4 messages each
    kept_a = cache.builder(a, AGENT, None, 1000)
    cache.builder(b, AGENT, None, 1000)
    assert cache.builder(a, AGENT, None, 1000) is kept_a  # a is now the most recent
    cache.builder(c, AGENT, None, 1000)  # three builders: b goes
    assert len(cache) == 2 and cache.messages_kept == 8
    assert cache.builder(a, AGENT, None, 1000) is kept_a

    big = _session("big", 6)  # 12 messages: past the bound, so not kept
    cache.builder(big, AGENT, None, 1000)
    assert cache.messages_kept <= 10
    assert cache.builder(big, AGENT, None, 1000) is not cache.builder(big, AGENT, None, 1000)


def test_a_kept_builder_serves_only_events_that_continue_what_it_consumed() -> None:
    cache = HistoryCache()
    session = _session("s", 2)
    kept = cache.builder(session, AGENT, None, 1000)
    other = Session(id="s", app_name="app", user_id="ada", events=_session("s", 3).events)
    # same shape, different events (new ids): the kept builder does not continue them
    assert cache.builder(other, AGENT, None, 1000) is not kept
    assert _said(list(cache.builder(other, AGENT, None, 1000).messages())) == _said(
        list(HistoryBuilder(AGENT, None, 1000).update(other.events).messages())
    )
