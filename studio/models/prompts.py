"""Prompt templates: a user's named instruction templates, each text a new version
(``agents_core.prompts`` renders them; ``studio.prompts`` finds and saves them)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from agents_core import prompts as core_prompts
from agents_core import specs as core_specs
from studio.models import ImmutableError


class PromptTemplate(models.Model):
    """One version of an owner's template. Written once, never edited: agent versions
    pin the version they render."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="prompt_templates"
    )
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(core_specs.NAME_PATTERN, core_specs.NAME_RULE)],
    )
    version = models.PositiveIntegerField()
    source = models.TextField(max_length=core_prompts.MAX_SOURCE_CHARS)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner", "name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name", "version"], name="prompt_template_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableError("a template version is never edited; save a new one")
        super().save(*args, **kwargs)

    def to_core(self) -> core_prompts.PromptTemplate:
        return core_prompts.PromptTemplate(self.name, self.version, self.source)
