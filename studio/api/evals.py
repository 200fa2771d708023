"""Eval runs in the API (``studio.evals``).

- ``POST /api/evals/``: run an agent version against a dataset version (202: its
  first cases are queued); ``GET /api/evals/``: yours, newest first, filtered by
  ``agent`` and ``dataset`` (id or name);
- ``GET /api/evals/<id>/``: one with its summary; ``GET /api/evals/<id>/results/``:
  its case results (per case and repeat, each with its session); ``POST
  /api/evals/<id>/cancel/``;
- ``GET /api/evals/compare/?a=&b=``: two side by side, regressions first;
  ``GET /api/evals/history/?agent=&dataset=``: pass rate, cost and latency per agent
  version over time;
- ``GET /api/evaluators/``: the evaluator kinds, built in and registered in code.

Another user's eval, agent or dataset answers 404.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from studio import evals
from studio.api import eval_serializers as es
from studio.api.permissions import request_owner
from studio.api.schema import error_responses
from studio.models import Agent, AgentVersion
from studio.models.evals import MAX_REPEATS, Dataset, DatasetVersion, EvalCaseResult, EvalRun

_RELATED = ("agent_version__agent", "dataset_version__dataset")


def owned_eval(request: Request, pk: uuid.UUID | str) -> EvalRun:
    try:
        key = uuid.UUID(str(pk))
    except ValueError:
        raise NotFound("no such eval run") from None
    found = (
        EvalRun.objects.select_related(*_RELATED)
        .filter(owner_id=request_owner(request).pk, pk=key)
        .first()
    )
    if found is None:
        raise NotFound("no such eval run")
    return found


def _by_id_or_name[M: (Agent, Dataset)](request: Request, model: type[M], ref: str, what: str) -> M:
    owned = model.objects.filter(owner_id=request_owner(request).pk)
    try:
        found = owned.filter(pk=uuid.UUID(ref)).first()
    except ValueError:
        found = owned.filter(name=ref).first()
    if found is None:
        raise NotFound(f"you have no {what} {ref!r}")
    found_model: M = found
    return found_model


def _agent_version(agent: Agent, number: int | None) -> AgentVersion | None:
    if number is None:
        return None
    found = agent.versions.filter(number=number).first()
    if found is None:
        raise NotFound(f"agent {agent.name!r} has no version {number}")
    return found


def _dataset_version(dataset: Dataset, number: int | None) -> DatasetVersion | None:
    if number is None:
        return None
    found = dataset.versions.filter(number=number).first()
    if found is None:
        raise NotFound(f"dataset {dataset.name!r} has no version {number}")
    return found


class EvalFilterSerializer(serializers.Serializer[object]):
    agent = serializers.CharField(required=False, max_length=64)
    dataset = serializers.CharField(required=False, max_length=64)


_FILTERS = [
    OpenApiParameter("agent", str, description="An agent's id or name."),
    OpenApiParameter("dataset", str, description="A dataset's id or name."),
]


def _filters(request: Request) -> tuple[Agent | None, Dataset | None]:
    query = EvalFilterSerializer(data=request.query_params)
    query.is_valid(raise_exception=True)
    data = query.validated_data
    agent = data.get("agent")
    dataset = data.get("dataset")
    return (
        None if agent is None else _by_id_or_name(request, Agent, agent, "agent"),
        None if dataset is None else _by_id_or_name(request, Dataset, dataset, "dataset"),
    )


class EvalListView(generics.ListAPIView[EvalRun]):
    """Your eval runs, newest first; and starting one."""

    serializer_class = es.EvalRunSerializer
    queryset = EvalRun.objects.none()  # the schema's model; get_queryset() answers

    def get_queryset(self) -> QuerySet[EvalRun]:
        agent, dataset = _filters(self.request)
        runs = EvalRun.objects.filter(owner_id=request_owner(self.request).pk)
        if agent is not None:
            runs = runs.filter(agent_version__agent=agent)
        if dataset is not None:
            runs = runs.filter(dataset_version__dataset=dataset)
        return runs.select_related(*_RELATED).order_by("-created_at")

    @extend_schema(
        parameters=_FILTERS,
        responses={200: es.EvalRunSerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=es.EvalCreateSerializer,
        responses={202: es.EvalRunSerializer, **error_responses(400, 404, 409)},
    )
    def post(self, request: Request) -> Response:
        """Start an eval run: 202, its first cases queued; 409 when the agent or the
        dataset has no version, or the dataset version no case."""
        body = es.EvalCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        agent = _by_id_or_name(request, Agent, data["agent"], "agent")
        dataset = _by_id_or_name(request, Dataset, data["dataset"], "dataset")
        eval_run = evals.create_eval(
            request_owner(request),
            agent=agent,
            version=_agent_version(agent, data.get("version")),
            dataset=dataset,
            dataset_version=_dataset_version(dataset, data.get("dataset_version")),
            evaluators=data.get("evaluators"),
            concurrency=data["concurrency"],
            repeats=data["repeats"],
        )
        eval_run = owned_eval(request, eval_run.pk)
        return Response(es.EvalRunSerializer(eval_run).data, status=status.HTTP_202_ACCEPTED)


class PassAtKSerializer(serializers.Serializer[object]):
    k = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_REPEATS,
        help_text="pass@k for this k (default: the eval's repeats).",
    )


class EvalDetailView(APIView):
    """One eval run with its summary."""

    @extend_schema(parameters=[PassAtKSerializer], responses={200: es.EvalRunSerializer})
    def get(self, request: Request, id: uuid.UUID) -> Response:
        query = PassAtKSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        eval_run = owned_eval(request, id)
        if "k" in query.validated_data:  # read afresh for another k
            eval_run.summary = evals.summary_of(eval_run, k=query.validated_data["k"])
        return Response(es.EvalRunSerializer(eval_run).data)


class EvalResultsView(generics.ListAPIView[EvalCaseResult]):
    """An eval run's case results, by case then repeat."""

    serializer_class = es.EvalResultSerializer
    queryset = EvalCaseResult.objects.none()  # the schema's model; get_queryset() answers

    def get_queryset(self) -> QuerySet[EvalCaseResult]:
        eval_run = owned_eval(self.request, self.kwargs["id"])
        return eval_run.results.order_by("case_index", "repeat")

    @extend_schema(responses={200: es.EvalResultSerializer(many=True)})
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class EvalCancelView(APIView):
    @extend_schema(request=None, responses={200: es.EvalRunSerializer, **error_responses(409)})
    def post(self, request: Request, id: uuid.UUID) -> Response:
        """Cancel a queued or running eval run: its case runs are cancelled, its cases
        not yet judged marked cancelled; a finished one answers 409 ``eval_finished``."""
        eval_run = evals.cancel(owned_eval(request, id))
        return Response(es.EvalRunSerializer(owned_eval(request, eval_run.pk)).data)


class CompareQuerySerializer(serializers.Serializer[object]):
    a = serializers.UUIDField()
    b = serializers.UUIDField()


class EvalCompareView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("a", uuid.UUID, required=True, description="The earlier eval run."),
            OpenApiParameter("b", uuid.UUID, required=True, description="The later eval run."),
        ],
        responses={200: es.CompareSerializer, **error_responses(404)},
    )
    def get(self, request: Request) -> Response:
        """Two eval runs per case, regressions first (passed in ``a``, failed in ``b``),
        then improvements, unchanged, and cases only one ran; with ``b - a`` deltas of
        pass rate, cost and latency p50."""
        query = CompareQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        a = owned_eval(request, query.validated_data["a"])
        b = owned_eval(request, query.validated_data["b"])
        return Response(es.CompareSerializer(evals.compare(a, b)).data)


class EvalHistoryView(APIView):
    @extend_schema(
        parameters=_FILTERS,
        responses={200: es.HistoryPointSerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request) -> Response:
        """Your ended eval runs (of ``agent``, on ``dataset``), oldest first: pass rate,
        cost and latency per agent version over time."""
        agent, dataset = _filters(request)
        points = evals.history(request_owner(request), agent=agent, dataset=dataset)
        return Response(es.HistoryPointSerializer(points, many=True).data)


class EvaluatorListView(APIView):
    @extend_schema(responses={200: es.EvaluatorKindSerializer(many=True)})
    def get(self, request: Request) -> Response:
        """The evaluator kinds an eval may use: built in, and registered in code
        (``kind: custom`` with their ``name``)."""
        return Response(es.EvaluatorKindSerializer(evals.catalogue(), many=True).data)
