"""Session storage backends. Adapters here import nothing from llm, tools or telemetry."""

from agents_core.sessions.base import BaseSessionService, Session, apply_state_delta
from agents_core.sessions.in_memory import InMemorySessionService

__all__ = ["BaseSessionService", "InMemorySessionService", "Session", "apply_state_delta"]
