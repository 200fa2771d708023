"""Skills: a user's folders of instructions with a ``SKILL.md`` (``agents_core.skills``;
``studio.skills`` checks uploads and serves them to runs)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from agents_core import skills as core_skills
from studio.models import ImmutableError


class Skill(models.Model):
    """One version of an owner's skill: what its ``SKILL.md`` says. Written once, never
    edited (an upload with the same name is the next version): agent versions pin the
    version they attached."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="skills"
    )
    name = models.CharField(
        max_length=64, validators=[RegexValidator(core_skills.SKILL_NAME_PATTERN)]
    )
    version = models.PositiveIntegerField()
    description = models.TextField(max_length=core_skills.MAX_DESCRIPTION_CHARS)
    body = models.TextField()
    size = models.PositiveIntegerField(help_text="Bytes in all its files, SKILL.md too.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner", "name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name", "version"], name="skill_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise ImmutableError("a skill version is never edited; upload a new one")
        super().save(*args, **kwargs)

    def to_core(self, paths: list[str]) -> core_skills.Skill:
        return core_skills.Skill(self.name, self.version, self.description, self.body, tuple(paths))


class SkillFile(models.Model):
    """One file of a skill version other than its ``SKILL.md``, as text."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=core_skills.MAX_PATH_CHARS)
    content = models.TextField()
    size = models.PositiveIntegerField()

    class Meta:
        ordering = ["skill", "path"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "path"], name="skill_file_path_unique")
        ]

    def __str__(self) -> str:
        return self.path
