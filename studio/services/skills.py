"""Skills: uploaded as a zip or a folder, and deleted by name."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser

from agents_core import skills as core_skills
from studio import skills
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import Skill
from studio.skills import archive


def upload_skill_zip(owner: AbstractBaseUser, data: bytes) -> Skill:
    """The skill in zip ``data`` as the next version of its name; anything wrong with
    the archive or its ``SKILL.md`` is ``InvalidInputError`` on ``archive``, and nothing
    is stored."""
    try:
        return skills.save(owner, archive.read_zip(data))
    except core_skills.SkillFormatError as exc:
        raise InvalidInputError("archive", [Problem((), exc.code, exc.message)]) from None


def upload_skill_folder(owner: AbstractBaseUser, files: Iterable[tuple[str, bytes]]) -> Skill:
    """A folder sent as (relative path, content) pairs, checked like a zip; problems are
    ``InvalidInputError`` on ``files``, and nothing is stored."""
    try:
        return skills.save(owner, archive.read_folder(files))
    except core_skills.SkillFormatError as exc:
        raise InvalidInputError("files", [Problem((), exc.code, exc.message)]) from None


def delete_skill(owner: AbstractBaseUser, name: str) -> int:
    """Delete every version of ``owner``'s skill ``name``, unless a stored agent version
    attaches it (``ConflictError``); how many versions went."""
    if users := skills.users_of(owner, name):
        raise ConflictError(
            f"skill {name!r} is attached by: {', '.join(users)}; change those agents first",
            code="skill_in_use",
        )
    deleted = Skill.objects.filter(owner_id=owner.pk, name=name)
    count = deleted.count()
    deleted.delete()
    return count
