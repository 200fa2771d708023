"""Writes a realistic history for benchmarks and load tests (``studio.management.history``):
by default 20 users, 10,000 sessions and about 1,000,000 events, one session of a
10,000-event run among them. Adds to what is there; a development and benchmark tool only."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio.management.history import Plan, generate


class Command(BaseCommand):
    help = "Generate a realistic history of sessions, runs and events, fast."

    def add_arguments(self, parser: CommandParser) -> None:
        defaults = Plan()
        parser.add_argument("--users", type=int, default=defaults.users)
        parser.add_argument("--sessions", type=int, default=defaults.sessions)
        parser.add_argument("--events", type=int, default=defaults.events)
        parser.add_argument("--big-sessions", type=int, default=defaults.big_sessions)
        parser.add_argument("--big-events", type=int, default=defaults.big_events)
        parser.add_argument("--seed", type=int, default=defaults.seed)
        parser.add_argument("--force", action="store_true", help="allow it with DEBUG off")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError(
                "refusing to fill a database with made-up history while DEBUG is off "
                "(--force to do it anyway)"
            )
        plan = Plan(
            users=options["users"],
            sessions=options["sessions"],
            events=options["events"],
            big_sessions=options["big_sessions"],
            big_events=options["big_events"],
            seed=options["seed"],
        )
        if problems := plan.problems():
            raise CommandError("; ".join(problems))
        started = time.monotonic()
        written = generate(plan, log=self.stdout.write)
        took = time.monotonic() - started
        self.stdout.write(
            f"wrote {written.users} users, {written.agents} agents, {written.sessions} sessions, "
            f"{written.runs} runs and {written.events} events in {took:.1f} s "
            f"({written.events / max(took, 1e-9):,.0f} events/s)"
        )
