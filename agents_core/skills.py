"""Skills: folders of instructions an agent loads when it needs them.

A skill is a folder with a ``SKILL.md`` at its top: a front matter block with its
``name`` (lowercase letters, digits and hyphens, at most 64) and ``description`` (at most
1024 characters), then a Markdown body::

    ---
    name: pdf-forms
    description: Fill in PDF forms. Use when the user sends a form to complete.
    ---
    # Filling forms
    Read `reference.md` for the field names ...

An agent spec attaches skills by name (``skills: [{"name": "pdf-forms"}]``). Disclosure
is progressive: the agent's instruction lists only the attached skills' names and
descriptions; the tools ``load_skill`` (the body, and the names of the other files) and
``read_skill_file`` (one of those files) bring the rest in when the model asks, and
``list_skills`` lists them again.

Skills come from a ``SkillStore`` (``InMemorySkillStore`` here; Studio keeps them per
user in its database). ``check_folder`` is the one gate a folder passes to become a
skill: relative paths inside the folder only (no ``..``, no absolute path, no
backslash), at most ``MAX_FILES`` files and ``MAX_TOTAL_BYTES`` in all, UTF-8 text
only, and a well-formed ``SKILL.md``. The front matter is read by a small strict parser
(``key: value`` lines, values optionally quoted), not by a YAML library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agents_core.context import ReadonlyContext, fill_instruction
from agents_core.exceptions import ConfigurationError, ToolExecutionError
from agents_core.specs import SKILL_NAME_PATTERN, SKILL_NAME_RULE
from agents_core.tools.base import BaseTool
from agents_core.tools.function import FunctionTool

__all__ = [
    "MAX_FILES",
    "MAX_TOTAL_BYTES",
    "SKILL_FILE",
    "SKILL_NAME_PATTERN",
    "InMemorySkillStore",
    "Skill",
    "SkillError",
    "SkillFolder",
    "SkillFormatError",
    "SkillStore",
    "check_folder",
    "check_path",
    "parse_skill_md",
    "skill_tools",
    "with_skills",
]

SKILL_FILE = "SKILL.md"
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_FILES = 50
MAX_TOTAL_BYTES = 1_000_000
"""The most a skill's files may hold together, uncompressed."""
MAX_PATH_CHARS = 255

_NAME = re.compile(SKILL_NAME_PATTERN)
_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*):(.*)$")


class SkillFormatError(ConfigurationError):
    """A folder or archive that is not a skill: a bad path, too many or too large
    files, a file that is not UTF-8 text, or a missing or malformed ``SKILL.md``."""

    code = "skill_format"


class SkillError(ToolExecutionError):
    """A skill tool asked for a skill or file the agent does not have."""

    code = "skill_error"


@dataclass(frozen=True, slots=True)
class Skill:
    """One version of a skill: its front matter, its body, and its other files' paths."""

    name: str
    version: int
    description: str
    body: str
    files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SkillFolder:
    """A checked folder: what ``SKILL.md`` says, and every file (``SKILL.md`` too)."""

    name: str
    description: str
    body: str
    files: dict[str, str]


class SkillStore(Protocol):
    """Where skills are found. ``get`` is read when an agent is built (``None`` for an
    unknown name or version; ``version=None`` asks for the latest); ``read_file`` when a
    tool asks for a file (``None`` when the skill has no such file)."""

    def get(self, name: str, version: int | None = None) -> Skill | None: ...

    async def read_file(self, name: str, version: int, path: str) -> str | None: ...


# Checking a folder


def check_path(path: str) -> str:
    """``path`` as a relative path inside a skill (``/``-separated, no empty or dot
    parts); ``SkillFormatError`` for anything that could point outside it."""
    if not path or len(path) > MAX_PATH_CHARS:
        raise SkillFormatError(f"a file path must be 1 to {MAX_PATH_CHARS} characters")
    if "\\" in path or "\x00" in path or ":" in path:
        raise SkillFormatError(f"{path!r}: a path may not contain '\\', ':' or NUL")
    if path.startswith("/"):
        raise SkillFormatError(f"{path!r}: absolute paths are not allowed")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise SkillFormatError(f"{path!r}: a path may not have empty, '.' or '..' parts")
    return path


def check_folder(files: Mapping[str, bytes]) -> SkillFolder:
    """The skill in ``files`` (relative path to content); ``SkillFormatError`` says
    what is wrong. A folder whose files all sit under one top folder is read from
    there, so ``my-skill/SKILL.md`` and ``SKILL.md`` both work."""
    if not files:
        raise SkillFormatError("the folder is empty: a skill needs a SKILL.md")
    if len(files) > MAX_FILES:
        raise SkillFormatError(f"a skill may have at most {MAX_FILES} files, not {len(files)}")
    total = sum(len(content) for content in files.values())
    if total > MAX_TOTAL_BYTES:
        raise SkillFormatError(f"a skill may hold at most {MAX_TOTAL_BYTES:,} bytes, not {total:,}")
    paths = [check_path(path) for path in files]
    prefix = _common_top(paths)
    texts = {path[len(prefix) :]: _text(path, files[path]) for path in paths}
    if SKILL_FILE not in texts:
        raise SkillFormatError(f"no {SKILL_FILE} at the top of the folder")
    name, description, body = parse_skill_md(texts[SKILL_FILE])
    return SkillFolder(name, description, body, texts)


def _common_top(paths: Sequence[str]) -> str:
    """``"top/"`` when every path is inside folder ``top`` and none is ``SKILL.md``."""
    if SKILL_FILE in paths:
        return ""
    tops = {path.split("/", 1)[0] for path in paths}
    if len(tops) == 1 and all("/" in path for path in paths):
        return f"{tops.pop()}/"
    return ""


def _text(path: str, content: bytes) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillFormatError(f"{path!r} is not UTF-8 text: skills hold text files") from None


def parse_skill_md(text: str) -> tuple[str, str, str]:
    """``SKILL.md``'s name, description and body; ``SkillFormatError`` when its front
    matter is missing, malformed, or lacks a valid ``name`` or ``description``."""
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise SkillFormatError(f"{SKILL_FILE} must start with a '---' front matter line")
    try:
        end = next(i for i, line in enumerate(lines[1:], 1) if line.strip() == "---")
    except StopIteration:
        raise SkillFormatError(f"{SKILL_FILE}'s front matter has no closing '---'") from None
    fields = _front_matter(lines[1:end])
    name, description = fields.get("name", ""), fields.get("description", "")
    if not _NAME.fullmatch(name) or len(name) > MAX_NAME_CHARS:
        raise SkillFormatError(f"{SKILL_FILE}: 'name' {name[:80]!r} will not do. {SKILL_NAME_RULE}")
    if not description or len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillFormatError(
            f"{SKILL_FILE}: 'description' must be 1 to {MAX_DESCRIPTION_CHARS} characters"
        )
    return name, description, "\n".join(lines[end + 1 :]).strip()


def _front_matter(lines: Sequence[str]) -> dict[str, str]:
    fields: dict[str, str] = {}
    for number, line in enumerate(lines, 2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = _KEY.match(line)
        if found is None:
            raise SkillFormatError(
                f"{SKILL_FILE} line {number}: front matter lines must read 'key: value'"
            )
        key, value = found.group(1), _unquote(found.group(2).strip(), number)
        if key in fields:
            raise SkillFormatError(f"{SKILL_FILE} line {number}: {key!r} is given twice")
        fields[key] = value
    return fields


def _unquote(value: str, number: int) -> str:
    if value[:1] in ("'", '"'):
        if len(value) < 2 or value[-1] != value[0]:
            raise SkillFormatError(f"{SKILL_FILE} line {number}: unclosed quote")
        return value[1:-1]
    return value


# Stores


class InMemorySkillStore:
    """Skills in a dict: for tests, and for callers that loaded theirs already."""

    def __init__(self) -> None:
        self._versions: dict[str, list[SkillFolder]] = {}

    def add(self, files: Mapping[str, bytes]) -> Skill:
        """The checked folder ``files`` as the next version of the skill it names."""
        folder = check_folder(files)
        versions = self._versions.setdefault(folder.name, [])
        versions.append(folder)
        return self._skill(folder, len(versions))

    def get(self, name: str, version: int | None = None) -> Skill | None:
        versions = self._versions.get(name, [])
        number = version or len(versions)
        if not 1 <= number <= len(versions):
            return None
        return self._skill(versions[number - 1], number)

    @staticmethod
    def _skill(folder: SkillFolder, version: int) -> Skill:
        others = tuple(sorted(path for path in folder.files if path != SKILL_FILE))
        return Skill(folder.name, version, folder.description, folder.body, others)

    async def read_file(self, name: str, version: int, path: str) -> str | None:
        versions = self._versions.get(name, [])
        if not 1 <= version <= len(versions):
            return None
        return versions[version - 1].files.get(path)


# What an agent with skills gets


def skills_listing(skills: Sequence[Skill]) -> str:
    lines = [f"- {skill.name}: {skill.description}" for skill in skills]
    return (
        "You have these skills. When a task matches one, call load_skill with its name "
        "to read its instructions before you act; read_skill_file reads the files it "
        "names.\n" + "\n".join(lines)
    )


def with_skills(
    instruction: str | Callable[[ReadonlyContext], str], skills: Sequence[Skill]
) -> Callable[[ReadonlyContext], str]:
    """An instruction provider: ``instruction`` (rendered as the agent would) followed
    by the names and descriptions of ``skills``."""
    listing = skills_listing(skills)

    def render(ctx: ReadonlyContext) -> str:
        base = (
            instruction(ctx) if callable(instruction) else fill_instruction(instruction, ctx.state)
        )
        return f"{base}\n\n{listing}" if base else listing

    return render


def skill_tools(skills: Sequence[Skill], store: SkillStore) -> list[BaseTool]:
    """``list_skills``, ``load_skill`` and ``read_skill_file`` over ``skills`` (the
    versions an agent attached); files are read from ``store`` when asked for."""
    by_name = {skill.name: skill for skill in skills}

    def attached(name: str) -> Skill:
        skill = by_name.get(name)
        if skill is None:
            known = ", ".join(sorted(by_name)) or "none"
            raise SkillError(f"no skill {name!r}: this agent's skills are {known}")
        return skill

    def list_skills() -> str:
        """List the skills you can load, with what each is for."""
        return "\n".join(f"- {s.name}: {s.description}" for s in skills)

    def load_skill(name: str) -> str:
        """Load a skill's instructions (its SKILL.md body) and the names of its files.

        Args:
            name: The skill's name, as listed.
        """
        skill = attached(name)
        files = "\n".join(f"- {path}" for path in skill.files) or "(none)"
        return f"{skill.body}\n\nFiles in skill {skill.name} (read_skill_file):\n{files}"

    async def read_skill_file(name: str, path: str) -> str:
        """Read one file of a skill, by the path load_skill listed.

        Args:
            name: The skill's name.
            path: The file's path inside the skill, e.g. reference.md.
        """
        skill = attached(name)
        try:
            checked = check_path(path)
        except SkillFormatError as exc:
            raise SkillError(exc.message) from None
        text = None
        if checked in skill.files:
            text = await store.read_file(skill.name, skill.version, checked)
        if text is None:
            raise SkillError(f"skill {name!r} has no file {path!r}")
        return text

    return [
        FunctionTool(list_skills, side_effects=False),
        FunctionTool(load_skill, side_effects=False),
        FunctionTool(read_skill_file, side_effects=False),
    ]
