"""Artifacts: versioned files of a session (``agents_core.artifacts``; ``studio.artifacts``
stores and serves them). The row says what a version is; its bytes live in the
``artifacts`` storage at ``path``, a name the server chose (never the artifact's)."""

from __future__ import annotations

from django.db import models

from agents_core import artifacts as core_artifacts
from studio.models import Session


class Artifact(models.Model):
    """One version of ``session``'s artifact ``name``; its owner is the session's.
    ``content_type`` is what the saver declared; ``served_type`` what Studio serves the
    bytes as, decided from the bytes themselves when they were saved."""

    id = models.BigAutoField(primary_key=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=core_artifacts.MAX_NAME_CHARS)
    version = models.PositiveIntegerField()
    content_type = models.CharField(max_length=128)
    served_type = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    path = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "name", "version"], name="artifact_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def is_image(self) -> bool:
        return self.served_type.startswith("image/")

    @property
    def is_text(self) -> bool:
        return self.served_type.startswith("text/")

    def to_core(self) -> core_artifacts.Artifact:
        return core_artifacts.Artifact(
            name=self.name,
            version=self.version,
            content_type=self.content_type,
            size=self.size,
            sha256=self.sha256,
            created_at=self.created_at,
        )
