"""Creates the demo account and its offline agents (idempotent). Local development only."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from studio import services
from studio.agents.demo import DEMO_AGENTS, DEMO_EVAL_CASES, DEMO_EVALS, MODELS
from studio.agents.prices import price_for
from studio.models import Agent, Dataset, ModelConfig
from studio.services import datasets

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
        for name, options in MODELS.items():
            if not ModelConfig.objects.filter(owner=user, name=name).exists():
                scripted = ModelConfig.Provider.SCRIPTED
                services.create_model_config(user.pk, name=name, provider=scripted, options=options)
        # Demo models seeded before they had prices get the made-up one, so the demo
        # shows cost; a price the demo user set is kept.
        unpriced = ModelConfig.objects.filter(owner=user, name__in=MODELS, price_input=None)
        for config in unpriced.filter(price_output=None):
            config.set_price(price_for(config.provider, config.model))
            config.save(update_fields=[*services.PRICE_FIELDS, "updated_at"])
        # Existing agents are left alone: the demo user may have edited them.
        existing = set(Agent.objects.filter(owner=user).values_list("name", flat=True))
        for name, description, spec in DEMO_AGENTS:
            if name in existing:
                continue
            services.create_agent(user, name=name, description=description, spec=spec)
            self.stdout.write(f"demo agent created: {name}")
        # Like the agents, a dataset the demo user has is left as it is.
        if not Dataset.objects.filter(owner=user, name=DEMO_EVALS).exists():
            datasets.create_dataset(
                user,
                DEMO_EVALS,
                description="What the calculator demo agent answers: "
                f"run_evals --dataset {DEMO_EVALS} --agent calculator",
                cases=DEMO_EVAL_CASES,
            )
            self.stdout.write(f"demo dataset created: {DEMO_EVALS}")
