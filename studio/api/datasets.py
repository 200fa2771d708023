"""Datasets of eval cases in the API: ``/api/datasets/``.

Each user sees only their own datasets (another user's id is a 404). A dataset's cases
live in numbered versions that are never edited: ``POST cases/``, ``PUT`` and ``DELETE
cases/<name>/`` each save a new version; ``versions/`` lists them and
``versions/<n>/`` returns one with its cases. ``POST import/`` reads a JSONL, CSV or
Google ADK ``.evalset.json`` file (a 400 that names the line, and nothing stored, when
it cannot); ``export/`` downloads the current cases as JSONL. ``DELETE`` is refused
(409) while an eval run pins one of its versions. ``POST /api/sessions/<id>/
dataset-cases/`` adds a session's turn as a case, its expectation prefilled.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db.models import QuerySet
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents_core.evals.contracts import Case
from studio.api import dataset_serializers as ds
from studio.api.permissions import request_owner
from studio.api.schema import error_responses
from studio.models import Dataset, DatasetVersion, Run, Session
from studio.services import dataset_cases, datasets


def owned_datasets(request: Request) -> QuerySet[Dataset]:
    return Dataset.objects.filter(owner_id=request.user.pk).select_related("current_version")


def _dataset(request: Request, id: UUID) -> Dataset:
    return get_object_or_404(owned_datasets(request), pk=id)


def _changed(version: DatasetVersion, code: int = status.HTTP_200_OK) -> Response:
    dataset = Dataset.objects.select_related("current_version").get(pk=version.dataset_id)
    body = {"dataset": ds.DatasetSerializer(dataset).data, "version": version.number}
    return Response(body, status=code)


class DatasetListView(APIView):
    """Your datasets, and a new one (its cases, if given, are its version 1)."""

    parser_classes = [JSONParser]

    @extend_schema(responses=ds.DatasetSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(ds.DatasetSerializer(owned_datasets(request), many=True).data)

    @extend_schema(request=ds.DatasetCreateSerializer, responses={201: ds.DatasetSerializer})
    def post(self, request: Request) -> Response:
        body = ds.DatasetCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        dataset = datasets.create_dataset(request_owner(request), **body.validated_data)
        return Response(ds.DatasetSerializer(dataset).data, status=status.HTTP_201_CREATED)


class DatasetDetailView(APIView):
    """One of your datasets: rename or describe it, or delete it with its versions."""

    parser_classes = [JSONParser]

    @extend_schema(responses=ds.DatasetSerializer)
    def get(self, request: Request, id: UUID) -> Response:
        return Response(ds.DatasetSerializer(_dataset(request, id)).data)

    @extend_schema(request=ds.DatasetSerializer, responses=ds.DatasetSerializer)
    def patch(self, request: Request, id: UUID) -> Response:
        dataset = _dataset(request, id)
        body = ds.DatasetSerializer(dataset, data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        datasets.update_dataset(dataset, **body.validated_data)
        return Response(ds.DatasetSerializer(dataset).data)

    @extend_schema(responses={204: None, **error_responses(409)})
    def delete(self, request: Request, id: UUID) -> Response:
        datasets.delete_dataset(_dataset(request, id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class DatasetVersionListView(APIView):
    """Every version of one of your datasets, newest first (without their cases)."""

    @extend_schema(responses=ds.DatasetVersionSerializer(many=True))
    def get(self, request: Request, id: UUID) -> Response:
        versions = _dataset(request, id).versions.order_by("-number")
        return Response(ds.DatasetVersionSerializer(versions, many=True).data)


class DatasetVersionDetailView(APIView):
    """One version of one of your datasets, with its cases."""

    @extend_schema(responses=ds.DatasetVersionDetailSerializer)
    def get(self, request: Request, id: UUID, number: int) -> Response:
        version = get_object_or_404(_dataset(request, id).versions, number=number)
        return Response(ds.DatasetVersionDetailSerializer(version).data)


class DatasetCaseListView(APIView):
    """The current cases of one of your datasets; a new case (a new version)."""

    parser_classes = [JSONParser]

    @extend_schema(responses=ds.DatasetVersionDetailSerializer)
    def get(self, request: Request, id: UUID) -> Response:
        current = _dataset(request, id).current_version
        if current is None:
            raise NotFound("this dataset has no version yet")
        return Response(ds.DatasetVersionDetailSerializer(current).data)

    @extend_schema(
        request=Case, responses={201: ds.DatasetChangeSerializer, **error_responses(409)}
    )
    def post(self, request: Request, id: UUID) -> Response:
        version = datasets.add_case(_dataset(request, id), _case_body(request))
        return _changed(version, status.HTTP_201_CREATED)


class DatasetCaseDetailView(APIView):
    """One case of one of your datasets, by name: replace it or remove it (each saves a
    new version)."""

    parser_classes = [JSONParser]

    @extend_schema(request=Case, responses=ds.DatasetChangeSerializer)
    def put(self, request: Request, id: UUID, name: str) -> Response:
        dataset = self._with_case(request, id, name)
        return _changed(datasets.replace_case(dataset, name, _case_body(request)))

    @extend_schema(responses={200: ds.DatasetChangeSerializer})
    def delete(self, request: Request, id: UUID, name: str) -> Response:
        return _changed(datasets.remove_case(self._with_case(request, id, name), name))

    @staticmethod
    def _with_case(request: Request, id: UUID, name: str) -> Dataset:
        dataset = _dataset(request, id)
        if all(case.name != name for case in datasets.current_cases(dataset)):
            raise NotFound(f"dataset {dataset.name!r} has no case named {name!r}")
        return dataset


def _case_body(request: Request) -> Any:
    """The body as JSON a case can be made of; its problems under ``case``."""
    try:
        return ds.CaseField().run_validation(request.data)
    except ValidationError as exc:
        raise ValidationError({"case": exc.detail}) from None


class DatasetImportView(APIView):
    """A JSONL, CSV or ADK eval set file as a new dataset or a new version of one."""

    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": ds.ImportSerializer},
        responses={200: ds.ImportedSerializer, 201: ds.ImportedSerializer},
    )
    def post(self, request: Request) -> Response:
        body = ds.ImportSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        upload = data["file"]
        imported = datasets.import_file(
            request_owner(request),
            upload.read(),
            filename=upload.name or "",
            fmt=data.get("format"),
            dataset=data.get("dataset"),
            name=data.get("name"),
        )
        dataset = imported.dataset
        dataset.refresh_from_db()
        result = {
            "dataset": ds.DatasetSerializer(dataset).data,
            "version": imported.version.number,
            "created": imported.created,
            "format": imported.format,
            "cases": len(imported.version.cases),
        }
        code = status.HTTP_201_CREATED if imported.created else status.HTTP_200_OK
        return Response(result, status=code)


class ExportQuerySerializer(serializers.Serializer[Any]):
    version = serializers.IntegerField(
        min_value=1,
        max_value=2_147_483_647,
        required=False,
        help_text="A version's number: the current one if left out.",
    )


class DatasetExportView(APIView):
    """The cases of one of your datasets (its current version, or ``version``) as JSONL,
    a case a line (``import/`` reads it back)."""

    @extend_schema(
        parameters=[ExportQuerySerializer],
        responses={(200, "application/jsonl"): OpenApiTypes.STR},
    )
    def get(self, request: Request, id: UUID) -> HttpResponse:
        dataset = _dataset(request, id)
        query = ExportQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        version = dataset.current_version
        if "version" in query.validated_data:
            version = get_object_or_404(dataset.versions, number=query.validated_data["version"])
        response = HttpResponse(datasets.export_jsonl(version), content_type="application/jsonl")
        number = version.number if version else 0
        filename = f"{dataset.name}.v{number}.jsonl"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response


class SessionDatasetCaseView(APIView):
    """Add a turn of one of your sessions to a dataset: the run's message (from the
    state the session had before it) as the case's input, and what the run did (its
    final answer, its tool calls with their arguments) as the case's expectation."""

    parser_classes = [JSONParser]

    @extend_schema(
        request=ds.AddTurnSerializer,
        responses={201: ds.AddedTurnSerializer, **error_responses(409)},
    )
    def post(self, request: Request, id: UUID) -> Response:
        session = get_object_or_404(Session.objects.filter(owner_id=request.user.pk), pk=id)
        body = ds.AddTurnSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        run = None
        if "run" in data:
            run = get_object_or_404(Run.objects.filter(session=session), pk=data["run"])
        added = dataset_cases.add_turn_to_dataset(
            request_owner(request),
            session,
            dataset=data["dataset"],
            run=run,
            name=data.get("name"),
        )
        added.dataset.refresh_from_db()
        result = {
            "dataset": ds.DatasetSerializer(added.dataset).data,
            "version": added.version.number,
            "created": added.created,
            "case": added.case.model_dump(mode="json"),
        }
        return Response(result, status=status.HTTP_201_CREATED)
