"""Memories in the database: what the API, the pages and runs read and write.

``DjangoMemoryService`` is ``agents_core.memory.MemoryService`` over the ``Memory``
rows of the run's owner (bound when the run starts, so no tool call looks the owner up
again); a run's ``session_id`` is a session key, resolved among the owner's sessions.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.db.models import QuerySet

from agents_core import memory as core_memory
from studio.memory.fulltext import search
from studio.models import Memory, Session

__all__ = ["DjangoMemoryService", "add", "owned", "search"]


def owned(owner_id: int, agent: str | None = None) -> QuerySet[Memory]:
    """``owner_id``'s memories (of ``agent`` only, when given), newest first."""
    found = Memory.objects.filter(owner_id=owner_id).select_related("session")
    return found.filter(agent=agent) if agent else found


def add(owner_id: int, agent: str, text: str, session: Session | None = None) -> Memory:
    """A new memory; ``MemoryStoreError`` when the text is empty or too long."""
    return Memory.objects.create(
        owner_id=owner_id, agent=agent, text=core_memory.checked_text(text), session=session
    )


class DjangoMemoryService:
    """The core's memory port over ``owner_id``'s ``Memory`` rows: one per run, bound to
    the run's owner, so a memory only ever belongs to them (``user_id`` names them on
    the core's side)."""

    def __init__(self, owner_id: int) -> None:
        self.owner_id = owner_id

    async def add(
        self, user_id: str, agent: str, text: str, session_id: str | None
    ) -> core_memory.Memory:
        return await sync_to_async(self._add)(user_id, agent, text, session_id)

    async def search(
        self, user_id: str, agent: str, query: str, limit: int
    ) -> list[core_memory.Memory]:
        return await sync_to_async(self._search)(user_id, agent, query, limit)

    async def forget(self, user_id: str, memory_id: str) -> bool:
        if not memory_id.isdigit():
            return False
        deleted, _ = await Memory.objects.filter(
            owner_id=self.owner_id, pk=int(memory_id)
        ).adelete()
        return deleted > 0

    def _add(
        self, user_id: str, agent: str, text: str, session_id: str | None
    ) -> core_memory.Memory:
        session = (
            Session.objects.filter(owner_id=self.owner_id, key=session_id).first()
            if session_id
            else None
        )
        return add(self.owner_id, agent, text, session).to_core(user_id)

    def _search(self, user_id: str, agent: str, query: str, limit: int) -> list[core_memory.Memory]:
        limit = max(1, min(limit, core_memory.MAX_RESULTS))
        return [m.to_core(user_id) for m in search(self.owner_id, agent, query, limit)]
