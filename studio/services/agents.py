"""Agents and their versions: create, edit (each changed spec a new version), delete,
export and import."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from studio.agents import specs as agent_specs
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import Agent, AgentVersion, Session, spec_hash
from studio.models.evals import EvalRun
from studio.services.sessions import FORMAT_VERSION, delete_session

AGENT_FORMAT = "studio.agent"


def create_agent(
    owner: AbstractBaseUser, *, name: str, spec: Any, description: str = "", note: str = ""
) -> Agent:
    """A new agent with its first version."""
    parsed = agent_specs.validate(owner, spec, agent_name=name)
    try:
        with transaction.atomic():
            agent = Agent.objects.create(owner_id=owner.pk, name=name, description=description)
            _add_version(agent, agent_specs.normalize(parsed), note)
    except IntegrityError:
        raise _name_taken(name) from None
    return agent


def update_agent(
    agent: Agent,
    *,
    name: str | None = None,
    description: str | None = None,
    spec: Any = None,
    note: str = "",
) -> Agent:
    """Rename, redescribe, and (when ``spec`` differs from the current one) add a version."""
    with transaction.atomic():
        if name is not None:
            agent.name = name
        if description is not None:
            agent.description = description
        try:
            with transaction.atomic():
                agent.save(update_fields=["name", "description", "updated_at"])
        except IntegrityError:
            raise _name_taken(agent.name) from None
        if spec is not None:
            save_agent_spec(agent, spec, note=note)
    return agent


def save_agent_spec(agent: Agent, spec: Any, *, note: str = "") -> tuple[AgentVersion, bool]:
    """Store ``spec`` as the agent's next version, unless it equals the current one.
    Returns the current version and whether it was created."""
    normalized = agent_specs.normalize(
        agent_specs.validate(agent.owner, spec, agent_name=agent.name)
    )
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        current = locked.current_version
        if current is not None and current.content_hash == spec_hash(normalized):
            return current, False
        version = _add_version(locked, normalized, note)
    agent.current_version = version
    return version, True


def delete_agent(agent: Agent) -> None:
    """Delete an agent no other agent references, with its versions, sessions
    (cancelling their active runs first) and eval runs (whose case sessions are among
    those sessions: an eval run keeps its agent version, so it goes with it)."""
    users = agent_specs.agents_referencing(agent.owner, agent.name)
    if users:
        raise ConflictError(
            f"agent {agent.name!r} is referenced by: {', '.join(users)}; change those first",
            code="agent_in_use",
        )
    with transaction.atomic():
        for session in Session.objects.filter(agent_version__agent=agent):
            delete_session(session)
        EvalRun.objects.filter(agent_version__agent=agent).delete()
        agent.delete()


def _add_version(agent: Agent, spec: dict[str, Any], note: str) -> AgentVersion:
    latest = agent.versions.aggregate(latest=Max("number"))["latest"] or 0
    version = AgentVersion.objects.create(agent=agent, number=latest + 1, spec=spec, note=note)
    agent.current_version = version
    agent.save(update_fields=["current_version", "updated_at"])
    return version


def _name_taken(name: str) -> InvalidInputError:
    return InvalidInputError(
        "name", [Problem((), "unique", f"you already have an agent named {name!r}")]
    )


def export_agent(agent: Agent) -> dict[str, Any]:
    """A portable JSON document of the agent's current definition. It names models and
    other agents by name only: nothing secret, nothing of anyone else's."""
    return {
        "format": AGENT_FORMAT,
        "format_version": FORMAT_VERSION,
        "name": agent.name,
        "description": agent.description,
        "spec": agent.spec,
        "exported_at": timezone.now().isoformat(),
    }


def import_agent(owner: AbstractBaseUser, document: dict[str, Any]) -> Agent:
    """Create an agent from an ``export_agent`` document (already shape-checked)."""
    return create_agent(
        owner,
        name=document["name"],
        description=document.get("description", ""),
        spec=document["spec"],
        note="imported",
    )
