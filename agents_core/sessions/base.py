"""Session storage: the contract every backend implements."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, overload

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_serializer

from agents_core.events import Event, new_id, utc_now


class Session(BaseModel):
    """A conversation: its state and its stored (non-partial) events, in seq order.

    Mutable on purpose: ``append_event`` updates the caller's copy in place, the
    way the stored copy changed, so a running invocation always sees current state.
    ``events`` is read-only to everyone else: a list, or an ``EventLog`` (a loaded
    session's events, shared with the store without copying them).
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id)
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: Sequence[Event] = Field(default_factory=list)
    created_at: AwareDatetime = Field(default_factory=utc_now)
    updated_at: AwareDatetime = Field(default_factory=utc_now)

    @property
    def last_seq(self) -> int:
        return (self.events[-1].seq or 0) if self.events else 0

    def add_stored(self, event: Event) -> None:
        """Mirror an event the service has just stored (only session services call this)."""
        if isinstance(self.events, EventLog | list):
            self.events.append(event)
        else:
            self.events = [*self.events, event]

    @field_serializer("events")
    def _events_as_list(self, events: Sequence[Event]) -> list[Event]:
        return list(events)


class EventLog(Sequence[Event]):
    """A loaded session's events without a copy: the first ``length`` events of the
    store's list, which the store only ever appends to, and then the events appended
    through this session. Appends made through other copies of the session never show,
    as with a copied list. Equal to any sequence of the same events."""

    __slots__ = ("_length", "_own", "_shared")

    def __init__(self, shared: list[Event]) -> None:
        self._shared = shared
        self._length = len(shared)
        self._own: list[Event] = []

    def append(self, event: Event) -> None:
        """Take ``event``, which the store has just stored: still shared if the store's
        list has it next (no other copy appended meanwhile), otherwise kept here."""
        shared, length = self._shared, self._length
        if not self._own and length < len(shared) and shared[length] is event:
            self._length += 1
        else:
            self._own.append(event)

    def __len__(self) -> int:
        return self._length + len(self._own)

    def __iter__(self) -> Iterator[Event]:
        return itertools.chain(itertools.islice(self._shared, self._length), self._own)

    @overload
    def __getitem__(self, index: int) -> Event: ...
    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...
    def __getitem__(self, index: int | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            begin, end, step = index.indices(len(self))
            if step != 1:
                return list(self)[index]
            shared = self._shared[begin : min(end, self._length)] if begin < self._length else []
            return shared + self._own[max(begin - self._length, 0) : max(end - self._length, 0)]
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("event index out of range")
        if position < self._length:
            return self._shared[position]
        return self._own[position - self._length]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    def __repr__(self) -> str:
        return f"EventLog({list(self)!r})"


class BaseSessionService(ABC):
    """Stores sessions and appends events to them.

    ``append_event`` is the only way events enter a session: it assigns the next
    ``seq``, applies ``actions.state_delta`` (a ``None`` value deletes the key),
    stores both atomically, and mirrors the change onto the given ``session``.
    Partial events are never stored: appending one is an error.
    """

    @abstractmethod
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """Create a session; ``SessionError`` if ``session_id`` is taken."""

    @abstractmethod
    async def get_session(self, *, app_name: str, user_id: str, session_id: str) -> Session | None:
        """The session with its events, or ``None`` if it does not exist for this user."""

    @abstractmethod
    async def update_session(self, session_id: str, *, state: dict[str, Any]) -> Session:
        """Replace the state; ``SessionNotFoundError`` if there is no such session."""

    @abstractmethod
    async def delete_session(self, session_id: str) -> None:
        """Delete the session and its events; deleting a missing session is a no-op."""

    @abstractmethod
    async def list_sessions(self, *, app_name: str, user_id: str) -> list[Session]:
        """The user's sessions, newest first, without their events."""

    @abstractmethod
    async def append_event(self, session: Session, event: Event) -> Event:
        """Store ``event`` and return it with its ``seq`` assigned."""


def apply_state_delta(state: dict[str, Any], delta: dict[str, Any]) -> None:
    """Merge ``delta`` into ``state``; a ``None`` value removes the key."""
    for key, value in delta.items():
        if value is None:
            state.pop(key, None)
        else:
            state[key] = value


def touch(session: Session, when: datetime | None = None) -> None:
    session.updated_at = when or utc_now()
