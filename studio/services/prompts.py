"""Prompt templates: a new version, a preview against sample state, deleting a name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from agents_core import prompts as core_prompts
from studio import prompts
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import PromptTemplate


def save_template(
    owner: AbstractBaseUser, name: str, source: str, description: str = ""
) -> PromptTemplate:
    """``source`` as the next version of ``owner``'s template ``name``; a template that
    does not compile, or reaches past the sandbox's bounds, is ``InvalidInputError``."""
    try:
        return prompts.save(owner, name, source, description)
    except core_prompts.PromptTemplateError as exc:
        raise InvalidInputError("source", [Problem((), exc.code, exc.message)]) from None


def preview_template(source: str, state: Mapping[str, Any]) -> str:
    """``source`` rendered against ``state`` as a run would; why not, as an
    ``InvalidInputError`` on ``source``."""
    try:
        return prompts.preview(source, state)
    except core_prompts.PromptTemplateError as exc:
        raise InvalidInputError("source", [Problem((), exc.code, exc.message)]) from None


def delete_template(owner: AbstractBaseUser, name: str) -> int:
    """Delete every version of ``owner``'s template ``name``, unless a stored agent
    version renders it (``ConflictError``); how many versions went."""
    if users := prompts.users_of(owner, name):
        raise ConflictError(
            f"template {name!r} is used by: {', '.join(users)}; change those agents first",
            code="template_in_use",
        )
    deleted, _ = PromptTemplate.objects.filter(owner_id=owner.pk, name=name).delete()
    return deleted
