"""Datasets of eval cases: create one, save its cases as a new version, add, replace or
remove one case (each a new version: a version is never edited, an eval run pins the
one it used), import a file as a dataset or a new version of one, rename and delete.

Every write is one transaction: a case that does not validate, a name taken twice, a
file that cannot be read stores nothing. The callers (pages, API) fetch the dataset
scoped to its owner; these functions trust the row they are given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max, ProtectedError
from pydantic import ValidationError

from agents_core import specs as core_specs
from agents_core.evals import formats
from agents_core.evals.contracts import Case
from studio.errors import ConflictError, InvalidInputError, Path, Problem
from studio.models import Dataset, DatasetVersion

NAME_MAX = 64
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Imported:
    """What an import made: the dataset, its new version, and whether it is new."""

    dataset: Dataset
    version: DatasetVersion
    created: bool
    format: formats.Format


# -- reading ---------------------------------------------------------------------------


def version_cases(version: DatasetVersion | None) -> list[Case]:
    """The cases of a stored version (none for no version)."""
    if version is None:
        return []
    return [Case.model_validate(value) for value in version.cases]


def current_cases(dataset: Dataset) -> list[Case]:
    return version_cases(dataset.current_version)


def export_jsonl(version: DatasetVersion | None) -> str:
    return formats.to_jsonl(version_cases(version))


def parse_case(value: Any, field: str = "case") -> Case:
    """``value`` as a ``Case``, or an ``InvalidInputError`` on ``field`` with the path of
    each problem inside it."""
    try:
        case = value if isinstance(value, Case) else Case.model_validate(value)
    except ValidationError as exc:
        raise InvalidInputError(field, _problems(exc)) from None
    if (path := unstorable_path(case.model_dump(mode="json"))) is not None:
        message = "NUL and lone surrogate characters are not allowed"
        raise InvalidInputError(field, [Problem(path, "unstorable_text", message)])
    return case


def unstorable_path(value: Any, path: Path = ()) -> Path | None:
    """Where in a JSON value a string or key holds what PostgreSQL cannot store (NUL,
    a lone surrogate), or ``None``."""
    if isinstance(value, str):
        return path if _UNSTORABLE.search(value) else None
    items: Iterable[tuple[Any, Any]] = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, child in items:
        if isinstance(key, str) and _UNSTORABLE.search(key):
            return (*path, key)
        if (found := unstorable_path(child, (*path, key))) is not None:
            return found
    return None


def parse_cases(values: Iterable[Any], field: str = "cases") -> list[Case]:
    """Every value as a ``Case`` (problems name the case's index), names unique."""
    cases: list[Case] = []
    for index, value in enumerate(values):
        try:
            cases.append(parse_case(value, field))
        except InvalidInputError as exc:
            problems = [Problem((index, *p.path), p.code, p.message) for p in exc.problems]
            raise InvalidInputError(field, problems) from None
    _check_cases(cases, field)
    return cases


def _problems(exc: ValidationError) -> list[Problem]:
    return [
        Problem(tuple(error["loc"]), error["type"], formats.plain_message(error))
        for error in exc.errors()
    ]


def _check_cases(cases: Sequence[Case], field: str) -> None:
    if len(cases) > formats.MAX_CASES:
        message = f"at most {formats.MAX_CASES:,} cases a dataset"
        raise InvalidInputError(field, [Problem((), "too_many", message)])
    seen: dict[str, int] = {}
    for index, case in enumerate(cases):
        if case.name in seen:
            message = f"the name {case.name!r} is taken by case {seen[case.name]}"
            raise InvalidInputError(field, [Problem((index, "name"), "unique", message)])
        seen[case.name] = index


# -- writing ---------------------------------------------------------------------------


def create_dataset(
    owner: AbstractBaseUser,
    name: str,
    *,
    description: str = "",
    cases: Iterable[Any] = (),
    note: str = "",
) -> Dataset:
    """A new dataset of ``owner`` with ``cases`` as its version 1."""
    dataset, _ = _create(owner, name, description, parse_cases(cases), note or "created")
    return dataset


def _create(
    owner: AbstractBaseUser, name: str, description: str, cases: Sequence[Case], note: str
) -> tuple[Dataset, DatasetVersion]:
    _check_name(name)
    with transaction.atomic():
        try:
            with transaction.atomic():
                dataset = Dataset.objects.create(
                    owner_id=owner.pk, name=name, description=description
                )
        except IntegrityError:
            raise _name_taken(name) from None
        return dataset, _add_version(dataset, cases, note)


def save_version(dataset: Dataset, cases: Iterable[Any], note: str = "") -> DatasetVersion:
    """``cases`` as the dataset's next version, which becomes its current one."""
    checked = parse_cases(cases)
    with transaction.atomic():
        return _add_version(_locked(dataset), checked, note)


def add_case(dataset: Dataset, case: Any, note: str = "") -> DatasetVersion:
    """A new version: the current cases and ``case`` (its name must be new)."""
    added = parse_case(case)
    with transaction.atomic():
        locked = _locked(dataset)
        cases = current_cases(locked)
        if any(existing.name == added.name for existing in cases):
            raise ConflictError(
                f"dataset {locked.name!r} already has a case named {added.name!r}",
                code="case_name_taken",
            )
        return _add_version(locked, [*cases, added], note or f"added {added.name}")


def replace_case(dataset: Dataset, name: str, case: Any, note: str = "") -> DatasetVersion:
    """A new version with case ``name`` replaced by ``case`` (which may rename it)."""
    replacement = parse_case(case)
    with transaction.atomic():
        locked = _locked(dataset)
        cases = current_cases(locked)
        index = _index_of(locked, cases, name)
        cases[index] = replacement
        _check_cases(cases, "case")
        return _add_version(locked, cases, note or f"changed {name}")


def remove_case(dataset: Dataset, name: str, note: str = "") -> DatasetVersion:
    """A new version without case ``name``."""
    with transaction.atomic():
        locked = _locked(dataset)
        cases = current_cases(locked)
        del cases[_index_of(locked, cases, name)]
        return _add_version(locked, cases, note or f"removed {name}")


def update_dataset(
    dataset: Dataset, *, name: str | None = None, description: str | None = None
) -> Dataset:
    """Rename or describe a dataset (its versions stay as they are)."""
    if name is not None:
        _check_name(name)
        dataset.name = name
    if description is not None:
        dataset.description = description
    try:
        with transaction.atomic():
            dataset.save(update_fields=["name", "description", "updated_at"])
    except IntegrityError:
        raise _name_taken(dataset.name) from None
    return dataset


def delete_dataset(dataset: Dataset) -> None:
    """Delete a dataset and its versions, unless an eval run pins one of them."""
    try:
        with transaction.atomic():
            dataset.delete()
    except ProtectedError:
        raise ConflictError(
            f"an eval run used dataset {dataset.name!r}; delete its eval runs first",
            code="dataset_in_use",
        ) from None


def import_file(
    owner: AbstractBaseUser,
    data: bytes,
    *,
    filename: str = "",
    fmt: formats.Format | None = None,
    dataset: Dataset | None = None,
    name: str | None = None,
) -> Imported:
    """A file's cases as a new version of ``dataset``, else of ``owner``'s dataset
    ``name`` (the file's own name when not given), created when it does not exist.
    A file that cannot be read is an ``InvalidInputError`` on ``file``."""
    chosen = fmt or formats.detect_format(filename, data)
    try:
        parsed = formats.parse_file(data, chosen, filename=filename)
        for index, case in enumerate(parsed.cases, start=1):
            if unstorable_path(case.model_dump(mode="json")) is not None:
                raise formats.DatasetFormatError(
                    f"case {index}: NUL and lone surrogate characters are not allowed"
                )
    except formats.DatasetFormatError as exc:
        raise InvalidInputError("file", [Problem((), "dataset_format", exc.message)]) from None
    note = f"imported {filename or 'a file'} ({chosen})"[:200]
    with transaction.atomic():
        target = dataset
        if target is None:
            wanted = name or dataset_name(parsed.name or filename)
            target = Dataset.objects.filter(owner_id=owner.pk, name=wanted).first()
            if target is None:
                new, first = _create(owner, wanted, parsed.description, parsed.cases, note)
                return Imported(new, first, True, chosen)
        version = _add_version(_locked(target), parsed.cases, note)
    return Imported(target, version, False, chosen)


def dataset_name(text: str) -> str:
    """A valid dataset name made from a file's or a set's name."""
    stem = text.rsplit("/", 1)[-1].split(".", 1)[0]
    cleaned = _NAME_CHARS.sub("-", stem).strip("-")[:NAME_MAX] or "dataset"
    return cleaned if re.match(r"[A-Za-z_]", cleaned) else f"_{cleaned}"[:NAME_MAX]


def _locked(dataset: Dataset) -> Dataset:
    return Dataset.objects.select_for_update().get(pk=dataset.pk)


def _index_of(dataset: Dataset, cases: list[Case], name: str) -> int:
    for index, case in enumerate(cases):
        if case.name == name:
            return index
    message = f"dataset {dataset.name!r} has no case named {name!r}"
    raise InvalidInputError("name", [Problem((), "not_found", message)])


def _add_version(dataset: Dataset, cases: Sequence[Case], note: str) -> DatasetVersion:
    latest = dataset.versions.aggregate(latest=Max("number"))["latest"] or 0
    version = DatasetVersion.objects.create(
        dataset=dataset,
        number=latest + 1,
        cases=[case.model_dump(mode="json") for case in cases],
        note=note[:200],
    )
    dataset.current_version = version
    dataset.save(update_fields=["current_version", "updated_at"])
    return version


def _check_name(name: str) -> None:
    if not re.match(core_specs.NAME_PATTERN, name):
        raise InvalidInputError("name", [Problem((), "invalid", core_specs.NAME_RULE)])


def _name_taken(name: str) -> InvalidInputError:
    return InvalidInputError(
        "name", [Problem((), "unique", f"you already have a dataset named {name!r}")]
    )
