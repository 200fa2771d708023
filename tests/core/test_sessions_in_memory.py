from __future__ import annotations

import pytest

from agents_core.events import Event, EventType
from agents_core.sessions import InMemorySessionService
from agents_core.sessions.base import EventLog, Session
from tests.core.session_contract import SessionServiceContract


class TestInMemorySessionService(SessionServiceContract):
    @pytest.fixture
    def service(self) -> InMemorySessionService:
        return InMemorySessionService()


def _message(n: int) -> Event:
    return Event(
        type=EventType.USER_MESSAGE, invocation_id="i", session_id="s", author="user", seq=n
    )


def test_an_event_log_reads_like_the_list_it_stands_for() -> None:
    shared = [_message(1), _message(2), _message(3)]
    log = EventLog(shared)
    shared.append(_message(4))  # appended through another copy: not this session's
    mine = _message(5)
    log.append(mine)
    expected = [*shared[:3], mine]
    assert list(log) == expected and log == expected and len(log) == 4
    assert [log[i] for i in range(-4, 4)] == expected * 2
    for window in (slice(0, 4), slice(1, 3), slice(2, None), slice(3, 9), slice(None, None, 2)):
        assert log[window] == expected[window]
    with pytest.raises(IndexError):
        log[4]
    assert Session(app_name="a", user_id="u", events=[]).model_copy(
        update={"events": log}
    ).model_dump()["events"] == [e.model_dump() for e in expected]
