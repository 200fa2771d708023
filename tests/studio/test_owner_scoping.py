"""Every object answers only to its owner: other users and staff get 404 (the same as a
missing id), anonymous callers 401. Staff get no extra API access; the admin is theirs."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from studio import evals, services
from studio.models import (
    Agent,
    Dataset,
    DatasetVersion,
    IngestedTrace,
    IngestToken,
    ModelConfig,
    RemoteAgent,
    Run,
    RunStatus,
    Session,
)
from studio.models.evals import EvalCaseResult, EvalRun
from studio.runs import records
from studio.runs.records import Ending
from studio.services import datasets, ingest, tokens
from tests.studio.conftest import client_for, make_agent, make_session, results, scripted_model
from tests.support.eval_runs import case, echo_agent, make_dataset
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of

pytestmark = pytest.mark.django_db

# (url template, method, payload, the owner's status)
ACTIONS: list[tuple[str, str, dict[str, Any] | None, int]] = [
    ("/api/agents/{agent}/", "get", None, 200),
    ("/api/agents/{agent}/", "patch", {"description": "mine now"}, 200),
    (
        "/api/agents/{agent}/",
        "put",
        {"name": "helper", "spec": {"name": "x", "model": "scripted"}},
        200,
    ),
    ("/api/agents/{agent}/versions/", "get", None, 200),
    ("/api/agents/{agent}/versions/1/", "get", None, 200),
    ("/api/agents/{agent}/export/", "get", None, 200),
    ("/api/agents/{agent}/", "delete", None, 204),
    ("/api/models/{model}/", "get", None, 200),
    ("/api/models/{model}/", "patch", {"api_key": "sk-stolen-0000000000"}, 200),
    ("/api/models/{model}/", "put", {"name": "scripted", "provider": "scripted"}, 200),
    ("/api/models/{model}/test/", "post", None, 200),
    ("/api/models/{spare_model}/", "delete", None, 204),
    ("/api/sessions/{session}/", "get", None, 200),
    ("/api/sessions/{session}/", "patch", {"title": "mine now"}, 200),
    ("/api/sessions/{session}/events/", "get", None, 200),
    ("/api/sessions/{session}/export/", "get", None, 200),
    ("/api/sessions/{session}/bundle/", "get", None, 200),
    ("/api/sessions/{session}/bundle/?zip=1", "get", None, 200),
    ("/api/sessions/{idle_session}/messages/", "post", {"text": "hi"}, 202),
    ("/api/sessions/{session}/forks/", "get", None, 200),
    ("/api/sessions/{session}/forks/", "post", {"seq": 1}, 201),
    ("/api/sessions/{idle_session}/continue/", "post", {"message": "hi"}, 202),
    ("/api/sessions/{session}/", "delete", None, 204),
    ("/api/runs/{run}/", "get", None, 200),
    ("/api/runs/{run}/cancel/", "post", None, 200),
    ("/api/runs/compare/?a={run}&b={run}", "get", None, 200),
    ("/api/runs/{ended_run}/replay/", "post", {}, 202),
    ("/api/datasets/{dataset}/", "get", None, 200),
    ("/api/datasets/{dataset}/", "patch", {"description": "mine now"}, 200),
    ("/api/datasets/{dataset}/versions/", "get", None, 200),
    ("/api/datasets/{dataset}/versions/1/", "get", None, 200),
    ("/api/datasets/{dataset}/cases/", "get", None, 200),
    ("/api/datasets/{dataset}/cases/", "post", {"name": "b", "input": {"turns": ["x"]}}, 201),
    ("/api/datasets/{dataset}/cases/a/", "put", {"name": "a", "input": {"turns": ["y"]}}, 200),
    ("/api/datasets/{dataset}/cases/a/", "delete", None, 200),
    ("/api/datasets/{dataset}/export/", "get", None, 200),
    ("/api/datasets/{dataset}/", "delete", None, 204),
    ("/api/sessions/{ended_session}/dataset-cases/", "post", {"dataset": "evals"}, 201),
    # A run ingested over OTLP (studio.services.ingest): its session, events and spans.
    ("/api/sessions/{ingested_session}/", "get", None, 200),
    ("/api/sessions/{ingested_session}/events/", "get", None, 200),
    ("/api/sessions/{ingested_session}/spans/", "get", None, 200),
    ("/api/runs/{ingested_run}/", "get", None, 200),
    ("/api/runs/{ingested_run}/spans/", "get", None, 200),
    ("/api/evals/{eval}/", "get", None, 200),
    ("/api/evals/{eval}/results/", "get", None, 200),
    ("/api/evals/compare/?a={eval}&b={eval}", "get", None, 200),
    ("/api/evals/history/?agent={eval_agent}&dataset={eval_dataset}", "get", None, 200),
    ("/api/evals/{eval}/cancel/", "post", None, 200),
    ("/api/remote-agents/{remote_agent}/", "get", None, 200),
    ("/api/remote-agents/{remote_agent}/", "patch", {"description": "mine now"}, 200),
    ("/api/remote-agents/{remote_agent}/refresh/", "post", None, 200),
    ("/api/remote-agents/{remote_agent}/", "delete", None, 204),
]

LISTS = [
    "/api/agents/",
    "/api/models/",
    "/api/sessions/",
    "/api/runs/",
    "/api/datasets/",
    "/api/evals/",
    "/api/remote-agents/",
]


@pytest.fixture
def owned(ada: User) -> dict[str, Any]:
    """Ada's objects of every kind."""
    agent = make_agent(ada)
    session = make_session(ada, agent, title="ada's")
    ended = ended_run(make_session(ada, agent))
    case = {"name": "a", "input": {"turns": ["hi"]}}
    return {
        "agent": agent.pk,
        "model": ModelConfig.objects.get(owner=ada, name="scripted").pk,
        "spare_model": scripted_model(ada, "spare").pk,
        "session": session.pk,
        "idle_session": make_session(ada, agent).pk,
        "run": services.start_run(session, "hello").pk,
        "ended_run": ended.pk,
        "ended_session": ended.session_id,
        "dataset": datasets.create_dataset(ada, "smoke", cases=[case]).pk,
        **owned_eval(ada),
        **ingested(ada),
        # Its card is on a closed loopback port: reading it fails at once, and says so.
        "remote_agent": RemoteAgent.objects.create(
            owner=ada, name="billing", url="http://127.0.0.1:9/"
        ).pk,
    }


def owned_eval(owner: User) -> dict[str, Any]:
    """An eval run of ``owner`` (of an agent of its own: deleting the other one is an
    action above, and an eval keeps its agent version), its first case started."""
    agent = echo_agent(owner, "evaluated")
    dataset = make_dataset(owner, "evaluated", [case("greets", "hello", expect="hello")])
    eval_run = evals.create_eval(owner, agent=agent, dataset=dataset)
    return {"eval": eval_run.pk, "eval_agent": agent.pk, "eval_dataset": dataset.pk}


def ingested(owner: User) -> dict[str, Any]:
    """A trace of ``owner``'s, sent over OTLP: its session and run."""
    trace_id = new_trace_id()
    ingest.ingest(owner.pk, request_of(*agent_trace(trace_id)))
    trace = IngestedTrace.objects.get(owner=owner, trace_id=trace_id)
    return {"ingested_session": trace.session_id, "ingested_run": trace.run_id}


def ended_run(session: Session) -> Run:
    """A run of ``session`` that ended (a replay needs one), its record in place."""
    run = services.start_run(session, "hello")
    records.end_run(run.pk, Ending(RunStatus.SUCCEEDED))
    return run


@pytest.fixture
def callers(ada: User, bob: User, staff: User) -> dict[str, APIClient]:
    return {
        "owner": client_for(ada),
        "other": client_for(bob),
        "staff": client_for(staff),
        "anonymous": client_for(None),
    }


def snapshot() -> list[Any]:
    """Everything the actions could change, to show a refused request changed nothing."""
    return [
        list(Agent.objects.values_list("pk", "name", "description", "current_version")),
        list(ModelConfig.objects.values_list("pk", "name", "api_key_ciphertext")),
        list(Session.objects.values_list("pk", "title", "status")),
        list(Run.objects.values_list("pk", "status")),
        list(Dataset.objects.values_list("pk", "name", "description", "current_version")),
        list(DatasetVersion.objects.values_list("pk")),
        list(EvalRun.objects.values_list("pk", "status")),
        list(EvalCaseResult.objects.values_list("pk", "status")),
        list(RemoteAgent.objects.values_list("pk", "name", "description", "card_error")),
    ]


REFUSED = (("other", 404), ("staff", 404), ("anonymous", 401))
"""Every caller but the owner, and the answer each gets."""


@pytest.mark.parametrize(("template", "method", "payload", "owner_status"), ACTIONS)
def test_only_the_owner_can_reach_an_object(
    owned: dict[str, Any],
    callers: dict[str, APIClient],
    template: str,
    method: str,
    payload: dict[str, Any] | None,
    owner_status: int,
) -> None:
    # The callers one after the other on the same objects: each refusal is checked to
    # change nothing, so the next caller meets what the first did (and the objects are
    # built once an action, not once a caller: a third of this file's time).
    url = template.format(**owned)
    before = snapshot()
    for who, expected in REFUSED:
        response = getattr(callers[who], method)(url, payload, format="json")
        assert response.status_code == expected, (who, response.content)
        assert response.json()["code"] in {"not_found", "not_authenticated"}, who
        assert snapshot() == before, f"{who}'s refused request changed something"


@pytest.mark.parametrize(("template", "method", "payload", "owner_status"), ACTIONS)
def test_the_owner_can_do_everything_to_their_object(
    owned: dict[str, Any],
    callers: dict[str, APIClient],
    template: str,
    method: str,
    payload: dict[str, Any] | None,
    owner_status: int,
) -> None:
    response = getattr(callers["owner"], method)(template.format(**owned), payload, format="json")
    assert response.status_code == owner_status, response.content


@pytest.mark.parametrize("url", LISTS)
def test_lists_show_only_the_callers_own_objects(
    owned: dict[str, Any], callers: dict[str, APIClient], url: str
) -> None:
    assert len(results(callers["owner"].get(url).json())) >= 1
    assert results(callers["other"].get(url).json()) == []
    assert results(callers["staff"].get(url).json()) == []
    assert callers["anonymous"].get(url).status_code == 401


@pytest.mark.parametrize(
    ("url", "payload"),
    [
        ("/api/agents/", {"name": "x", "spec": {"name": "x", "model": "scripted"}}),
        ("/api/models/", {"name": "x", "provider": "scripted"}),
        ("/api/sessions/", {"agent": "00000000-0000-0000-0000-000000000000"}),
        ("/api/evals/", {"agent": "helper", "dataset": "smoke"}),
        ("/api/datasets/", {"name": "x"}),
        ("/api/bundles/import/", {"file": "x"}),
        (
            "/api/agents/import/",
            {"format": "studio.agent", "format_version": 1, "name": "x", "spec": {}},
        ),
    ],
)
def test_anonymous_callers_cannot_create_anything(url: str, payload: dict[str, Any]) -> None:
    assert client_for(None).post(url, payload, format="json").status_code == 401


def test_a_session_cannot_be_started_on_another_users_agent(
    owned: dict[str, Any], callers: dict[str, APIClient]
) -> None:
    for who in ("other", "staff"):
        response = callers[who].post(
            "/api/sessions/", {"agent": str(owned["agent"])}, format="json"
        )
        assert response.status_code == 400
        assert response.json()["errors"][0] == {
            "path": "agent",
            "code": "does_not_exist",
            "detail": f'Invalid pk "{owned["agent"]}" - object does not exist.',
        }


def test_filtering_runs_by_another_users_session_finds_nothing(
    owned: dict[str, Any], callers: dict[str, APIClient]
) -> None:
    body = callers["other"].get(f"/api/runs/?session={owned['session']}").json()
    assert results(body) == []


def test_filtering_sessions_by_another_users_agent_finds_nothing(
    owned: dict[str, Any], callers: dict[str, APIClient]
) -> None:
    body = callers["other"].get(f"/api/sessions/?agent={owned['agent']}").json()
    assert results(body) == []


def test_malformed_ids_answer_404_like_missing_ones(callers: dict[str, APIClient]) -> None:
    for url in ["/api/agents/nope/", "/api/sessions/123/", "/api/runs/x/", "/api/models/1/"]:
        response = callers["owner"].get(url)
        assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_only_the_owner_can_publish_an_agent_over_a2a(
    ada: User, bob: User, staff: User, owned: dict[str, Any]
) -> None:
    url = f"/agents/{owned['agent']}/a2a/"
    for intruder in (bob, staff):
        assert signed_in(intruder).post(url, {"published": "1"}).status_code == 404
    assert Client().post(url, {"published": "1"}).status_code == 302  # to sign in
    assert not Agent.objects.get(pk=owned["agent"]).a2a_published
    answer = signed_in(ada).post(url, {"published": "1"})
    assert answer.status_code == 302, answer
    assert answer["Location"] == "/mcp-tokens/"
    assert Agent.objects.get(pk=owned["agent"]).a2a_published


def signed_in(user: User) -> Client:
    """A browser signed in as ``user`` (the pages' session, not the API's token)."""
    browser = Client()
    browser.force_login(user)
    return browser


def test_only_the_owner_can_revoke_an_ingest_token(ada: User, bob: User, staff: User) -> None:
    row, _ = tokens.create_token(IngestToken, ada, "exporter")
    url = f"/settings/trace-ingest/{row.pk}/revoke/"
    for user in (bob, staff):
        browser = client_for(user)
        browser.force_login(user)
        assert browser.post(url).status_code == 404
    assert client_for(None).post(url).status_code == 302  # to the sign-in page
    assert IngestToken.objects.filter(pk=row.pk).exists()
    owner = client_for(ada)
    owner.force_login(ada)
    assert owner.post(url).status_code == 302
    assert not IngestToken.objects.exists()
