"""Memories: short texts a user's agents keep across sessions (``agents_core.memory``;
``studio.memory`` stores and searches them)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from agents_core import memory as core_memory
from studio.models import Session


class Memory(models.Model):
    """One memory of ``owner``, written by agent ``agent`` in ``session`` (which may be
    deleted since: the memory stays). An integer key, so SQLite's full-text index can
    follow the row by its rowid."""

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memories"
    )
    agent = models.CharField(max_length=64)
    text = models.TextField(max_length=core_memory.MAX_MEMORY_CHARS)
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "agent", "-created_at"], name="memory_by_agent")]

    def __str__(self) -> str:
        return f"{self.agent}: {self.text[:40]}"

    def to_core(self, user_id: str) -> core_memory.Memory:
        session_key = self.session.key if self.session is not None else None
        return core_memory.Memory(
            str(self.pk), user_id, self.agent, self.text, session_key, self.created_at
        )
