"""Memories: written, edited and deleted by their owner (runs write theirs through
``studio.memory.DjangoMemoryService``)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from agents_core import memory as core_memory
from studio import memory
from studio.errors import InvalidInputError, Problem
from studio.models import Memory


def _checked(text: str) -> str:
    try:
        return core_memory.checked_text(text)
    except core_memory.MemoryStoreError as exc:
        raise InvalidInputError("text", [Problem((), exc.code, exc.message)]) from None


def add_memory(owner: AbstractBaseUser, agent: str, text: str) -> Memory:
    """A memory ``owner`` writes by hand for ``agent``."""
    return memory.add(owner.pk, agent, _checked(text))


def edit_memory(found: Memory, text: str) -> Memory:
    """``found`` (already checked to be the caller's) with its text replaced."""
    found.text = _checked(text)
    found.save(update_fields=["text", "updated_at"])
    return found
