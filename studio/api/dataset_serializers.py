"""The shapes of datasets in the API: a dataset, its versions, a case (the contract's
``Case`` JSON, validated by pydantic in ``services.datasets``), an upload."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents_core.evals import formats
from agents_core.evals.contracts import CASE_NAME_MAX, Case
from studio.api.fields import NameField
from studio.api.serializers import OwnedPrimaryKeyRelatedField, StoredJSONField
from studio.models import Dataset, DatasetVersion


@extend_schema_field(Case)  # type: ignore[arg-type]  # pydantic: supported
class CaseField(StoredJSONField):
    """One case: its input turns and starting state, its expectation, its tags. Its
    shape is checked against the contract (``agents_core.evals.contracts.Case``)."""


class DatasetSerializer(serializers.ModelSerializer[Dataset]):
    """A dataset and its current version's number and size."""

    name = NameField(help_text="Letters, digits, '_' or '-': `run_evals --dataset NAME`.")
    description = serializers.CharField(required=False, allow_blank=True, max_length=2_000)
    version = serializers.SerializerMethodField(help_text="The current version's number.")
    cases = serializers.SerializerMethodField(help_text="How many cases it has.")

    class Meta:
        model = Dataset
        fields = ["id", "name", "description", "version", "cases", "created_at", "updated_at"]
        read_only_fields = ["id", "version", "cases", "created_at", "updated_at"]

    def get_version(self, dataset: Dataset) -> int | None:
        current = dataset.current_version
        return current.number if current is not None else None

    def get_cases(self, dataset: Dataset) -> int:
        current = dataset.current_version
        return len(current.cases) if current is not None else 0


class DatasetCreateSerializer(serializers.Serializer[Any]):
    """A new dataset, with its first cases if any (they become version 1)."""

    name = NameField(help_text="Letters, digits, '_' or '-': `run_evals --dataset NAME`.")
    description = serializers.CharField(required=False, allow_blank=True, max_length=2_000)
    cases = serializers.ListField(
        child=CaseField(), required=False, max_length=formats.MAX_CASES, default=list
    )


class DatasetVersionSerializer(serializers.ModelSerializer[DatasetVersion]):
    """One version of a dataset: written once, never edited."""

    cases = serializers.SerializerMethodField(help_text="How many cases it has.")

    class Meta:
        model = DatasetVersion
        fields = ["id", "number", "note", "cases", "created_at"]
        read_only_fields = fields

    def get_cases(self, version: DatasetVersion) -> int:
        return len(version.cases)


class DatasetVersionDetailSerializer(serializers.ModelSerializer[DatasetVersion]):
    """One version with its cases."""

    cases = serializers.ListField(child=CaseField(), read_only=True)

    class Meta:
        model = DatasetVersion
        fields = ["number", "note", "cases", "created_at"]
        read_only_fields = fields


class DatasetChangeSerializer(serializers.Serializer[Any]):
    """What a change of cases made: the dataset's new current version."""

    dataset = DatasetSerializer()
    version = serializers.IntegerField()


class ImportSerializer(serializers.Serializer[Any]):
    """A dataset file, read as ``format`` (from its name or its content when not given);
    it becomes a new version of ``dataset`` (an id of yours), else of your dataset named
    ``name`` (the file's own name when not given), made when it does not exist."""

    file = serializers.FileField(
        allow_empty_file=True,  # read as a dataset file, which says it has no cases
        help_text=f"JSONL, CSV or an ADK .evalset.json, at most {formats.MAX_FILE_BYTES:,} bytes.",
    )
    format = serializers.ChoiceField(choices=list(formats.FORMATS), required=False)
    dataset = OwnedPrimaryKeyRelatedField(
        queryset=Dataset.objects.all(), required=False, help_text="One of your datasets' ids."
    )
    name = NameField(required=False)


class ImportedSerializer(serializers.Serializer[Any]):
    dataset = DatasetSerializer()
    version = serializers.IntegerField()
    created = serializers.BooleanField(help_text="Whether the import made the dataset.")
    format = serializers.ChoiceField(choices=list(formats.FORMATS))
    cases = serializers.IntegerField(help_text="How many cases the file had.")


class AddTurnSerializer(serializers.Serializer[Any]):
    """A session's turn as a new case: ``dataset`` is one of yours, by id or by name (a
    new name makes it); ``run`` the turn (the session's last ended run by default)."""

    dataset = serializers.CharField(max_length=64)
    run = serializers.UUIDField(required=False)
    name = serializers.CharField(
        required=False, max_length=CASE_NAME_MAX, help_text="The case's name (from its text)."
    )


class AddedTurnSerializer(serializers.Serializer[Any]):
    dataset = DatasetSerializer()
    version = serializers.IntegerField()
    created = serializers.BooleanField(help_text="Whether the dataset was made for it.")
    case = CaseField()
