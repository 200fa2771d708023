"""Creates the demo account and its offline agents (idempotent). Local development only."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio import services
from studio.agents.demo import DEMO_AGENTS, MODEL
from studio.models import Agent, ModelConfig

DEMO_USERNAME = "demo"
DEMO_PASSWORD = "demo"  # noqa: S105 - a documented local-only demo account


class Command(BaseCommand):
    help = "Create the demo user (demo / demo) and its offline demo agents. Safe to run twice."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="allow seeding when DEBUG is off (never in production)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError(
                "refusing to create a demo account with a known password while DEBUG is off"
            )
        user, created = get_user_model().objects.get_or_create(username=DEMO_USERNAME)
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        self.stdout.write(
            f"demo user {'created' if created else 'already present'}: {DEMO_USERNAME}"
        )
        ModelConfig.objects.get_or_create(
            owner=user, name=MODEL, defaults={"provider": ModelConfig.Provider.SCRIPTED}
        )
        # Existing agents are left alone: the demo user may have edited them.
        existing = set(Agent.objects.filter(owner=user).values_list("name", flat=True))
        for name, description, spec in DEMO_AGENTS:
            if name in existing:
                continue
            services.create_agent(user, name=name, description=description, spec=spec)
            self.stdout.write(f"demo agent created: {name}")
