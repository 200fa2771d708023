"""Studio as an MCP server, its use cases: the tokens MCP clients sign in with, the
agents a user publishes to them, and asking one of those agents a question as an
ordinary Studio session of that user (``studio.mcp_endpoint`` is the transport).

An agent is published once it has a saved version: its current version answers, each
call in a new session the user sees in Studio like any other (titled by the message).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from studio.db import db_sync_to_async
from studio.errors import InvalidInputError, Problem
from studio.models import ACTIVE_RUN_STATUSES, Agent, Event, McpToken, Run, RunStatus
from studio.services import tokens
from studio.services.sessions import start_run, start_session
from studio.services.tokens import MAX_TOKENS_PER_USER as MAX_TOKENS_PER_USER

MAX_MESSAGE_CHARS = 100_000
_POLL_S = 0.1


# Tokens


def create_token(owner: AbstractBaseUser, name: str) -> tuple[McpToken, str]:
    """A new MCP token for ``owner``: the row, and the token itself (shown once)."""
    return tokens.create_token(McpToken, owner, name)


def revoke_token(token: McpToken) -> None:
    tokens.revoke_token(token)


def user_for_token(token: str) -> Any | None:
    """The active user ``token`` belongs to, or ``None``; notes when it was used."""
    row = tokens.token_row(McpToken, token)
    return None if row is None else row.owner


# Published agents


def published_agents(user_id: Any) -> list[Agent]:
    """The agents of ``user_id`` an MCP client may call: those with a saved version."""
    return list(
        Agent.objects.filter(owner_id=user_id, current_version__isnull=False).order_by("name")
    )


@dataclass(frozen=True, slots=True)
class Answer:
    ok: bool
    text: str
    session_id: str
    run_id: str
    status: str


async def ask_agent(user_id: Any, agent_name: str, message: str) -> Answer:
    """Run ``user_id``'s published agent ``agent_name`` on ``message`` in a new session
    and wait for its final answer (at most ``STUDIO_MCP_SERVE_RUN_TIMEOUT_S``; then
    the answer says the run goes on in Studio). ``LookupError`` for an agent that is
    not theirs or not published; ``StudioError``s of starting a run pass through."""
    if not message.strip() or len(message) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(
            "message", [Problem((), "invalid", f"1 to {MAX_MESSAGE_CHARS} characters")]
        )
    run = await db_sync_to_async(_start)(user_id, agent_name, message)
    try:
        async with asyncio.timeout(settings.STUDIO_MCP_SERVE_RUN_TIMEOUT_S):
            while run.status in ACTIVE_RUN_STATUSES:
                await asyncio.sleep(_POLL_S)
                await db_sync_to_async(run.refresh_from_db)(fields=["status", "error_message"])
    except TimeoutError:
        return Answer(
            False,
            f"the run is still going after {settings.STUDIO_MCP_SERVE_RUN_TIMEOUT_S}s; "
            f"see session {run.session_id} in Studio",
            str(run.session_id),
            str(run.pk),
            run.status,
        )
    return await db_sync_to_async(_answer)(run)


def _start(user_id: Any, agent_name: str, message: str) -> Run:
    agent = Agent.objects.filter(
        owner_id=user_id, name=agent_name, current_version__isnull=False
    ).first()
    if agent is None:
        raise LookupError(agent_name)
    owner = get_user_model().objects.get(pk=user_id)
    session = start_session(owner, agent)
    return start_run(session, message)


def _answer(run: Run) -> Answer:
    ok = run.status in (RunStatus.SUCCEEDED, RunStatus.DEGRADED)
    text = _final_text(run) if ok else f"the run {run.status}: {run.error_message or 'no message'}"
    return Answer(ok, text, str(run.session_id), str(run.pk), run.status)


def _final_text(run: Run) -> str:
    """The last text the run's own agents said (not an agent called as a tool)."""
    last = (
        Event.objects.filter(session_id=run.session_id, type="agent_message", tool="")
        .exclude(text="")
        .order_by("-seq")
        .values_list("text", flat=True)
        .first()
    )
    return last or ""
