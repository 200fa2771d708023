"""Runs an agent for one message from the command line, printing events as they arrive."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents_core import events as core_events
from studio import services
from studio.event_lines import describe
from studio.models import Agent, RunStatus, Session
from studio.runs.execute import execute_run


class Command(BaseCommand):
    help = "Run an agent (by id, or by name) on one message and print its events as they arrive."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", help="the agent's id, or its name")
        parser.add_argument("message", help="what to say to it")
        parser.add_argument("--user", help="the owner's username (needed if names clash)")
        parser.add_argument("--session", help="continue this session instead of starting one")
        parser.add_argument("--json", action="store_true", help="print each event as wire JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        agent = _find_agent(options["agent"], options["user"])
        session = _session(agent, options["session"])
        run = services.start_run(session, options["message"])
        self.stderr.write(f"session {session.pk}, run {run.pk}")
        printer = self._print_json if options["json"] else self._print
        finished = asyncio.run(execute_run(run, on_event=printer))
        if finished.status == RunStatus.DEGRADED:  # it finished: say what failed on the way
            self.stderr.write(f"run degraded: {finished.error_message}")
        elif finished.status != RunStatus.SUCCEEDED:
            raise CommandError(
                f"run {finished.status}: {finished.error_code}: {finished.error_message}"
            )

    async def _print_json(self, event: core_events.Event) -> None:
        if not event.partial:
            self.stdout.write(json.dumps(event.to_wire(), ensure_ascii=False))

    async def _print(self, event: core_events.Event) -> None:
        if not event.partial:
            self.stdout.write(describe(event))


def _find_agent(ref: str, username: str | None) -> Agent:
    agents = Agent.objects.select_related("owner", "current_version")
    if username is not None:
        owner = get_user_model()._default_manager.filter(username=username).first()
        if owner is None:
            raise CommandError(f"no user {username!r}")
        agents = agents.filter(owner_id=owner.pk)
    try:
        found = list(agents.filter(pk=uuid.UUID(ref)))
    except ValueError:
        found = list(agents.filter(name=ref))
    if not found:
        raise CommandError(f"no agent {ref!r}")
    if len(found) > 1:
        owners = ", ".join(sorted(a.owner.get_username() for a in found))
        raise CommandError(f"several users have an agent named {ref!r} ({owners}): pass --user")
    return found[0]


def _session(agent: Agent, session_id: str | None) -> Session:
    if session_id is None:
        return services.start_session(agent.owner, agent, title="run_agent")
    session = Session.objects.filter(pk=session_id, owner_id=agent.owner_id).first()
    if session is None:
        raise CommandError(f"no session {session_id!r} of {agent.owner.get_username()!r}")
    return session
