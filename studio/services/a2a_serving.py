"""Studio as an A2A server, its use cases (``studio.a2a_endpoint`` is the transport).

An agent is served over A2A once its owner publishes it there (``set_a2a_published``)
and it has a saved version. Callers sign in with one of the owner's MCP tokens, so a
token only ever reaches its own user's agents; anyone else's agent, or one not
published, is not found (``LookupError``).

Each A2A task is a Studio run of the owner: the task id is the run's id and the
context id its session's, so a message that names a context goes on in that session
(a follow-up the owner sees in the same timeline) and one that names none starts a new
session. Everything here is synchronous ORM work; the transport calls it off the loop.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from studio.errors import InvalidInputError, Problem
from studio.models import Agent, Event, Run, RunStatus, Session, SessionStatus
from studio.services.mcp_serving import MAX_MESSAGE_CHARS
from studio.services.sessions import cancel_run, start_run, start_session


def set_a2a_published(agent: Agent, published: bool) -> Agent:
    """Publish ``agent`` over A2A (or withdraw it); withdrawing refuses new calls at once."""
    Agent.objects.filter(pk=agent.pk).update(a2a_published=published)
    agent.a2a_published = published
    return agent


def a2a_agent(user_id: Any, agent_id: str) -> Agent | None:
    """``user_id``'s agent ``agent_id`` if it is published over A2A and has a version."""
    pk = _uuid(agent_id)
    if pk is None:
        return None
    return (
        Agent.objects.select_related("current_version")
        .filter(pk=pk, owner_id=user_id, a2a_published=True, current_version__isnull=False)
        .first()
    )


def a2a_agents(user_id: Any) -> list[Agent]:
    return list(Agent.objects.filter(owner_id=user_id, a2a_published=True).order_by("name"))


def send(user_id: Any, agent_id: str, text: str, context_id: str = "") -> Run:
    """Start a run of the published agent on ``text``: in the session ``context_id``
    names (which must be the user's, of this agent), or in a new one. ``LookupError``
    for an unknown agent or context; ``InvalidInputError``/``ConflictError``/
    ``LimitError`` from starting a run (one active run per session, the user's cap)."""
    if not text.strip() or len(text) > MAX_MESSAGE_CHARS:
        raise InvalidInputError(
            "message", [Problem((), "invalid", f"text of 1 to {MAX_MESSAGE_CHARS} characters")]
        )
    agent = a2a_agent(user_id, agent_id)
    if agent is None:
        raise LookupError(agent_id)
    if context_id:
        session = _session(user_id, agent, context_id)
        if session is None:
            raise LookupError(context_id)
    else:
        session = start_session(get_user_model().objects.get(pk=user_id), agent)
    return start_run(session, text)


def _session(user_id: Any, agent: Agent, context_id: str) -> Session | None:
    pk = _uuid(context_id)
    if pk is None:
        return None
    return Session.objects.filter(pk=pk, owner_id=user_id, agent_version__agent_id=agent.pk).first()


def task_run(user_id: Any, agent_id: str, task_id: str) -> Run | None:
    """The run ``task_id`` names, if it is one of the user's runs of this agent."""
    pk, agent_pk = _uuid(task_id), _uuid(agent_id)
    if pk is None or agent_pk is None:
        return None
    return Run.objects.filter(
        pk=pk, session__owner_id=user_id, session__agent_version__agent_id=agent_pk
    ).first()


def cancel(run: Run) -> Run:
    """Cancel the task's run; ``ConflictError`` once it has ended."""
    return cancel_run(run)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a task says of its run at one moment."""

    task_id: str
    context_id: str
    status: str
    request: str
    answer: str
    error: str
    messages: list[tuple[int, str]]
    """(seq, text) of the run's own agents' messages after the asked ``after_seq``."""
    waiting: bool = False
    """Running, but waiting on a person (an approval, a question) before it parks."""


def snapshot(run: Run, *, after_seq: int = 0) -> Snapshot:
    run.refresh_from_db(fields=["status", "error_message", "error_code", "invocation_id"])
    messages = list(
        _own_messages(run).filter(seq__gt=after_seq).order_by("seq").values_list("seq", "text")
    )
    answer = ""
    if run.status in (RunStatus.SUCCEEDED, RunStatus.DEGRADED):
        last = _own_messages(run).order_by("-seq").values_list("text", flat=True).first()
        answer = last or ""
    return Snapshot(
        task_id=str(run.pk),
        context_id=str(run.session_id),
        status=run.status,
        request=run.message,
        answer=answer,
        error=run.error_message,
        messages=messages,
        waiting=run.status == RunStatus.RUNNING
        and Session.objects.filter(pk=run.session_id, status=SessionStatus.WAITING).exists(),
    )


def _own_messages(run: Run) -> Any:
    """The run's text messages of its own agents: not those of an agent called as a
    tool (a model call inside a call has ``tool`` set), nor anything on a tool call's
    branch (``<branch>.<agent>@<call id>``, where a remote A2A agent's progress is)."""
    if not run.invocation_id:  # not started yet: nothing said
        return Event.objects.none()
    return Event.objects.filter(
        session_id=run.session_id, invocation_id=run.invocation_id, type="agent_message", tool=""
    ).exclude(Q(text="") | Q(branch__contains="@"))


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text)
    except (ValueError, TypeError, AttributeError):
        return None
