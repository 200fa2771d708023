"""Session storage: the contract every backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from agents_core.events import Event, new_id, utc_now


class Session(BaseModel):
    """A conversation: its state and its stored (non-partial) events, in seq order.

    Mutable on purpose: ``append_event`` updates the caller's copy in place, the
    way the stored copy changed, so a running invocation always sees current state.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=new_id)
    app_name: str
    user_id: str
    state: dict[str, Any] = Field(default_factory=dict)
    events: list[Event] = Field(default_factory=list)
    created_at: AwareDatetime = Field(default_factory=utc_now)
    updated_at: AwareDatetime = Field(default_factory=utc_now)

    @property
    def last_seq(self) -> int:
        return (self.events[-1].seq or 0) if self.events else 0


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
