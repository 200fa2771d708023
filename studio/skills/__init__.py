"""A user's skills: uploaded as versions, found for the specs that attach them, pinned
into those specs, and read by runs (``agents_core.skills`` checks and serves them).

An upload is checked whole (``studio.skills.archive`` for its container,
``agents_core.skills.check_folder`` for its content) before anything is written, and
written in one transaction: a refused upload leaves nothing behind. A spec stored
without a skill version gets the latest one (``pin``), so an agent version keeps the
skill it was saved with after a new one is uploaded. A skill cannot be deleted while a
stored agent version attaches it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max

from agents_core import skills as core_skills
from agents_core import specs as core_specs
from studio.models import Skill, SkillFile, agents_whose_tree

__all__ = ["OwnerSkills", "latest_versions", "pin", "save", "users_of", "versions"]


class OwnerSkills:
    """``owner``'s skills as the core's ``SkillStore``, read from the database."""

    def __init__(self, owner_id: Any) -> None:
        self.owner_id = owner_id

    def get(self, name: str, version: int | None = None) -> core_skills.Skill | None:
        rows = Skill.objects.filter(owner_id=self.owner_id, name=name)
        row = rows.filter(version=version).first() if version else rows.first()
        if row is None:
            return None
        return row.to_core(list(row.files.values_list("path", flat=True)))

    async def read_file(self, name: str, version: int, path: str) -> str | None:
        found = SkillFile.objects.filter(
            skill__owner_id=self.owner_id, skill__name=name, skill__version=version, path=path
        )
        return await sync_to_async(lambda: found.values_list("content", flat=True).first())()


def latest_versions(owner_id: Any) -> list[Skill]:
    """The latest version of each of the owner's skills, by name."""
    latest: dict[str, Skill] = {}
    for row in Skill.objects.filter(owner_id=owner_id).order_by("name", "-version"):
        latest.setdefault(row.name, row)
    return list(latest.values())


def versions(owner_id: Any, name: str) -> list[Skill]:
    """Every version of the owner's skill ``name``, newest first (empty: none)."""
    return list(Skill.objects.filter(owner_id=owner_id, name=name))


def save(owner: AbstractBaseUser, files: Mapping[str, bytes]) -> Skill:
    """The folder ``files`` as the next version of the skill its ``SKILL.md`` names;
    ``SkillFormatError`` (and nothing stored) when it is not a valid skill."""
    folder = core_skills.check_folder(files)
    for _ in range(3):  # two uploads racing for one version number: the loser goes next
        try:
            with transaction.atomic():
                return _write(owner, folder)
        except IntegrityError:
            continue
    raise IntegrityError(f"could not number a new version of skill {folder.name!r}")


def _write(owner: AbstractBaseUser, folder: core_skills.SkillFolder) -> Skill:
    taken = Skill.objects.filter(owner_id=owner.pk, name=folder.name)
    skill = Skill.objects.create(
        owner_id=owner.pk,
        name=folder.name,
        version=(taken.aggregate(top=Max("version"))["top"] or 0) + 1,
        description=folder.description,
        body=folder.body,
        size=sum(len(text.encode()) for text in folder.files.values()),
    )
    SkillFile.objects.bulk_create(
        SkillFile(skill=skill, path=path, content=text, size=len(text.encode()))
        for path, text in sorted(folder.files.items())
        if path != core_skills.SKILL_FILE
    )
    return skill


def pin(spec: core_specs.AgentSpec, store: core_skills.SkillStore) -> core_specs.AgentSpec:
    """``spec`` with every skill it attaches without a version pinned to the latest one
    (an unknown skill is left for ``check_spec``)."""

    def pinned(agent: core_specs.AgentSpec) -> dict[str, Any]:
        if all(ref.version is not None for ref in agent.skills):
            return {}
        return {"skills": [_pinned(ref, store) for ref in agent.skills]}

    return spec.with_each_agent(pinned)


def _pinned(ref: core_specs.SkillRef, store: core_skills.SkillStore) -> core_specs.SkillRef:
    if ref.version is None and (found := store.get(ref.name)):
        return ref.model_copy(update={"version": found.version})
    return ref


def users_of(owner: AbstractBaseUser, name: str) -> list[str]:
    """The names of ``owner``'s agents with a stored version that attaches skill
    ``name``, anywhere in its tree."""
    return agents_whose_tree(owner, lambda agent: _attaches(agent, name))


def _attaches(agent: Mapping[str, Any], name: str) -> bool:
    refs = agent.get("skills")
    return isinstance(refs, list) and any(
        isinstance(ref, Mapping) and ref.get("name") == name for ref in refs
    )
