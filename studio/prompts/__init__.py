"""A user's prompt templates: saved as versions, found for the specs that name them,
pinned into those specs, and previewed (``agents_core.prompts`` renders them).

A spec stored without a template version gets the latest one written in (``pin``), so
an agent version keeps rendering the text it was saved with after the template changes.
A template name cannot be deleted while a stored agent version names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max

from agents_core import prompts as core_prompts
from agents_core import specs as core_specs
from studio.models import PromptTemplate, agents_whose_tree

__all__ = [
    "OwnerTemplates",
    "latest_versions",
    "pin",
    "preview",
    "save",
    "users_of",
    "versions",
]


class OwnerTemplates:
    """``owner``'s templates as the core's ``TemplateStore``, read from the database."""

    def __init__(self, owner_id: Any) -> None:
        self.owner_id = owner_id

    def get(self, name: str, version: int | None = None) -> core_prompts.PromptTemplate | None:
        rows = PromptTemplate.objects.filter(owner_id=self.owner_id, name=name)
        row = rows.filter(version=version).first() if version else rows.first()
        return row.to_core() if row else None


def latest_versions(owner_id: Any) -> list[PromptTemplate]:
    """The latest version of each of the owner's templates, by name."""
    latest: dict[str, PromptTemplate] = {}
    for row in PromptTemplate.objects.filter(owner_id=owner_id).order_by("name", "-version"):
        latest.setdefault(row.name, row)
    return list(latest.values())


def versions(owner_id: Any, name: str) -> list[PromptTemplate]:
    """Every version of the owner's template ``name``, newest first (empty: none)."""
    return list(PromptTemplate.objects.filter(owner_id=owner_id, name=name))


def save(owner: AbstractBaseUser, name: str, source: str, description: str = "") -> PromptTemplate:
    """``source`` as the next version of ``owner``'s template ``name``; refused with
    ``PromptTemplateError`` when it does not compile or could not be bounded."""
    core_prompts.check_source(source)
    for _ in range(3):  # two writers racing for one version number: the loser goes next
        try:
            with transaction.atomic():
                taken = PromptTemplate.objects.filter(owner_id=owner.pk, name=name)
                number = (taken.aggregate(top=Max("version"))["top"] or 0) + 1
                return PromptTemplate.objects.create(
                    owner_id=owner.pk,
                    name=name,
                    version=number,
                    source=source,
                    description=description,
                )
        except IntegrityError:
            continue
    raise IntegrityError(f"could not number a new version of template {name!r}")


def preview(source: str, state: Mapping[str, Any]) -> str:
    """What ``source`` renders to against ``state``; ``PromptTemplateError`` says why not."""
    return core_prompts.render(source, state)


def pin(spec: core_specs.AgentSpec, store: core_prompts.TemplateStore) -> core_specs.AgentSpec:
    """``spec`` with every template reference that names no version pinned to the
    latest one (a reference to an unknown template is left for ``check_spec``)."""

    def pinned(agent: core_specs.AgentSpec) -> dict[str, Any]:
        ref = agent.instruction_template
        if ref is None or ref.version is not None or (found := store.get(ref.name)) is None:
            return {}
        return {"instruction_template": ref.model_copy(update={"version": found.version})}

    return spec.with_each_agent(pinned)


def users_of(owner: AbstractBaseUser, name: str) -> list[str]:
    """The names of ``owner``'s agents with a stored version that names template
    ``name``, anywhere in its tree."""
    return agents_whose_tree(owner, lambda agent: _names(agent, name))


def _names(agent: Mapping[str, Any], name: str) -> bool:
    ref = agent.get("instruction_template")
    return isinstance(ref, Mapping) and ref.get("name") == name
