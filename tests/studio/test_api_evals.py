"""Eval runs over the API: started, followed to the end, listed, cancelled, compared
and charted; validated at the boundary; the owner's alone; the LLM judge through a real
OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from agents_core.evals import registry
from agents_core.evals.contracts import Verdict
from studio import evals, runs, services
from studio.models import ModelConfig
from studio.models.evals import Dataset
from tests.studio.conftest import client_for, error_paths, remote_model, results
from tests.support.eval_runs import case, echo_agent, make_dataset
from tests.support.live import run_manager  # noqa: F401  (an autouse fixture)
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)

CASES = [
    case("greets", "hello", expect="hello"),
    case("asks", "what now?", expect="what now"),
    case("strict", "x", expect="never said"),
]


@sync_to_async
def call(client: APIClient, method: str, path: str, body: Any = None) -> Any:
    return getattr(client, method)(path, body, format="json")


async def finished(client: APIClient, eval_id: str, *, within: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        body: dict[str, Any] = (await call(client, "get", f"/api/evals/{eval_id}/")).json()
        if body["status"] not in ("queued", "running"):
            return body
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.05)


@pytest.fixture
def eval_setup(ada: User) -> Dataset:
    echo_agent(ada)
    return make_dataset(ada, "smoke", CASES)


async def test_an_eval_over_the_api_runs_every_case_and_answers_its_summary_and_results(
    ada: User, eval_setup: Dataset
) -> None:
    runs.executor().start()
    api = client_for(ada)
    started = await call(api, "post", "/api/evals/", {"agent": "echo", "dataset": "smoke"})
    assert started.status_code == 202, started.content
    body = started.json()
    assert body["agent"] == "echo" and body["agent_version"] == 1
    assert body["dataset"] == "smoke" and body["dataset_version"] == 1
    assert [spec["kind"] for spec in body["evaluators"]] == [
        "contains", "trajectory", "state", "limits",
    ]  # fmt: skip
    done = await finished(api, body["id"])
    assert done["status"] == "succeeded"
    assert done["summary"]["counts"]["passed"] == 2 and done["summary"]["counts"]["failed"] == 1
    assert done["summary"]["pass_rate"] == pytest.approx(2 / 3)
    listed = results((await call(api, "get", f"/api/evals/{body['id']}/results/")).json())
    assert [(r["case_name"], r["status"]) for r in listed] == [
        ("greets", "passed"), ("asks", "passed"), ("strict", "failed"),
    ]  # fmt: skip
    strict = listed[2]
    contains = next(v for v in strict["verdicts"] if v["evaluator"] == "contains")
    assert contains["status"] == "failed" and contains["detail"]
    session = await call(api, "get", f"/api/sessions/{strict['session']}/")
    assert session.status_code == 200  # every case a real session its owner can open


async def test_the_judge_asks_one_of_the_owners_models_through_a_real_server(
    ada: User, eval_setup: Dataset, openai_server: OpenAIServer
) -> None:
    runs.executor().start()
    await sync_to_async(remote_model)(ada, openai_server.base_url, api_key="k")
    openai_server.reply('{"score": 5, "reasoning": "It greets back."}')
    openai_server.reply("no json at all")
    openai_server.reply('{"score": 2, "reasoning": "Off topic."}')
    judge = {"kind": "judge", "rubric": "Does it answer the user?", "model": "remote"}
    api = client_for(ada)
    started = await call(
        api,
        "post",
        "/api/evals/",
        {"agent": "echo", "dataset": "smoke", "evaluators": [judge], "concurrency": 1},
    )
    assert started.status_code == 202, started.content
    done = await finished(api, started.json()["id"])
    listed = results((await call(api, "get", f"/api/evals/{done['id']}/results/")).json())
    verdicts = [Verdict.model_validate(r["verdicts"][0]) for r in listed]
    assert [r["status"] for r in listed] == ["passed", "error", "failed"]
    assert verdicts[0].score == 1.0 and "It greets back." in verdicts[0].detail
    assert verdicts[0].prompt is not None and "Does it answer the user?" in verdicts[0].prompt
    assert verdicts[1].status == "error"  # a judge answering nonsense is never a pass
    assert verdicts[2].score == 0.25
    assert len(openai_server.chat_requests) == 3
    assert openai_server.chat_requests[0].authorization == "Bearer k"


def test_bad_input_is_refused_with_its_path_and_nothing_is_stored(
    ada: User, bob: User, eval_setup: Dataset
) -> None:
    api = client_for(ada)
    base = {"agent": "echo", "dataset": "smoke"}
    paths = error_paths(
        api.post("/api/evals/", {**base, "evaluators": [{"kind": "nope"}]}, format="json")
    )
    assert "evaluators" in paths
    paths = error_paths(
        api.post(
            "/api/evals/",
            {**base, "evaluators": [{"kind": "regex", "pattern": "("}]},
            format="json",
        )
    )
    assert "not a valid regular expression" in paths["evaluators"]
    judge = {"kind": "judge", "rubric": "r", "model": "missing"}
    paths = error_paths(api.post("/api/evals/", {**base, "evaluators": [judge]}, format="json"))
    assert paths == {"evaluators.0.model": "you have no model configuration 'missing'"}
    custom = {"kind": "custom", "name": "not_registered"}
    paths = error_paths(api.post("/api/evals/", {**base, "evaluators": [custom]}, format="json"))
    assert paths == {"evaluators.0.name": "no custom evaluator 'not_registered'"}
    # a custom evaluator's parameters are checked against its params model up front,
    # not found wrong by every case after each one ran
    words = {"kind": "custom", "name": "max_words", "params": {"maximum": 3}}
    paths = error_paths(api.post("/api/evals/", {**base, "evaluators": [words]}, format="json"))
    assert paths == {
        "evaluators.0.params.max": "Field required",
        "evaluators.0.params.maximum": "not a parameter it takes",
    }
    assert "concurrency" in error_paths(
        api.post("/api/evals/", {**base, "concurrency": 0}, format="json")
    )
    assert "repeats" in error_paths(api.post("/api/evals/", {**base, "repeats": 11}, format="json"))
    assert api.post("/api/evals/", {**base, "agent": "ghost"}, format="json").status_code == 404
    assert api.post("/api/evals/", {**base, "version": 9}, format="json").status_code == 404
    assert api.post("/api/evals/", {**base, "dataset_version": 9}, format="json").status_code == 404
    echo_agent(bob, "theirs")
    make_dataset(bob, "theirs", CASES)
    assert api.post("/api/evals/", {**base, "agent": "theirs"}, format="json").status_code == 404
    assert api.post("/api/evals/", {**base, "dataset": "theirs"}, format="json").status_code == 404
    Dataset.objects.create(owner=ada, name="empty")
    refused = api.post("/api/evals/", {**base, "dataset": "empty"}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "dataset_has_no_version"
    assert results(api.get("/api/evals/").json()) == []
    assert not ada.studio_sessions.exists()


def test_other_users_get_404_and_anonymous_401(ada: User, bob: User, eval_setup: Dataset) -> None:
    agent = ada.agents.get(name="echo")
    eval_run = evals.create_eval(ada, agent=agent, dataset=eval_setup, concurrency=1)
    theirs = client_for(bob)
    for path in ("", "results/"):
        assert theirs.get(f"/api/evals/{eval_run.pk}/{path}").status_code == 404
        assert client_for(None).get(f"/api/evals/{eval_run.pk}/{path}").status_code == 401
    assert theirs.post(f"/api/evals/{eval_run.pk}/cancel/").status_code == 404
    assert results(theirs.get("/api/evals/").json()) == []
    compared = theirs.get(f"/api/evals/compare/?a={eval_run.pk}&b={eval_run.pk}")
    assert compared.status_code == 404
    assert theirs.get("/api/evals/history/?agent=echo").status_code == 404
    assert client_for(None).get("/api/evals/").status_code == 401
    mine = client_for(ada)
    assert [e["id"] for e in results(mine.get("/api/evals/?agent=echo&dataset=smoke").json())] == [
        str(eval_run.pk)
    ]
    cancelled = mine.post(f"/api/evals/{eval_run.pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    again = mine.post(f"/api/evals/{eval_run.pk}/cancel/")
    assert again.status_code == 409 and again.json()["code"] == "eval_finished"


async def test_compare_puts_regressions_first_and_history_charts_each_version(
    ada: User, eval_setup: Dataset
) -> None:
    runs.executor().start()
    api = client_for(ada)
    first = await call(api, "post", "/api/evals/", {"agent": "echo", "dataset": "smoke"})
    a = await finished(api, first.json()["id"])

    @sync_to_async
    def worse_version() -> None:
        agent = ada.agents.get(name="echo")
        ModelConfig.objects.create(
            owner=ada, name="shout", provider="scripted",
            options={"script": [{"text": "HELLO! never said"}], "loop": True},
        )  # fmt: skip
        services.save_agent_spec(agent, {**agent.current_version.spec, "model": "shout"})

    await worse_version()
    second = await call(api, "post", "/api/evals/", {"agent": "echo", "dataset": "smoke"})
    b = await finished(api, second.json()["id"])
    assert b["agent_version"] == 2
    compared = (await call(api, "get", f"/api/evals/compare/?a={a['id']}&b={b['id']}")).json()
    changes = [(row["case_name"], row["change"]) for row in compared["cases"]]
    # v2 answers "HELLO! never said": "greets" still contains "hello" (any case),
    # "asks" no longer contains "what now", "strict" now contains "never said"
    assert changes == [("asks", "regression"), ("strict", "improvement"), ("greets", "unchanged")]
    assert compared["delta"]["pass_rate"] == pytest.approx(0.0)
    history = (await call(api, "get", "/api/evals/history/?agent=echo&dataset=smoke")).json()
    assert [(p["agent_version"], p["eval_run"]) for p in history] == [
        (1, a["id"]), (2, b["id"]),
    ]  # fmt: skip
    assert history[0]["pass_rate"] == pytest.approx(2 / 3)
    bad = await call(api, "get", "/api/evals/compare/?a=nope&b=")
    assert bad.status_code == 400


@pytest.fixture
def shouting() -> Iterator[None]:
    @registry.register_evaluator("test.shouting", description="The answer is in capitals.")
    def shouting(case: Any, outcome: Any, params: dict[str, Any]) -> Verdict:
        upper = outcome.final_output.isupper()
        return Verdict(evaluator="shouting", status="passed" if upper else "failed")

    yield
    registry.unregister_evaluator("test.shouting")


def test_evaluators_lists_the_built_in_kinds_and_the_registered_ones(
    ada: User, shouting: None
) -> None:
    listed = client_for(ada).get("/api/evaluators/").json()
    kinds = [row["kind"] for row in listed if row["builtin"]]
    assert kinds == [
        "exact", "contains", "regex", "json_schema", "trajectory", "limits", "state", "judge",
    ]  # fmt: skip
    custom = {row["name"]: row for row in listed if not row["builtin"]}
    assert custom["test.shouting"] == {
        "kind": "custom",
        "name": "test.shouting",
        "description": "The answer is in capitals.",
        "builtin": False,
        "params": None,  # declares none: takes any
    }
    assert custom["max_words"]["params"] == [
        {
            "name": "max",
            "required": True,
            "description": "The most words the final answer may have (0 or more).",
            "default": None,
        }
    ]
    assert custom["no_error"]["params"] == []
    assert client_for(None).get("/api/evaluators/").status_code == 401


def test_deleting_an_agent_deletes_its_eval_runs_with_its_sessions(
    ada: User, eval_setup: Dataset
) -> None:
    agent = ada.agents.get(name="echo")
    eval_run = evals.create_eval(ada, agent=agent, dataset=eval_setup)
    api = client_for(ada)
    assert api.delete(f"/api/agents/{agent.pk}/").status_code == 204
    assert api.get(f"/api/evals/{eval_run.pk}/").status_code == 404
    assert not ada.studio_sessions.exists()
    assert Dataset.objects.filter(pk=eval_setup.pk).exists()  # the dataset stays


async def test_a_judge_that_does_not_answer_in_time_makes_the_case_an_error(
    ada: User, openai_server: OpenAIServer
) -> None:
    runs.executor().start()

    @sync_to_async
    def setup() -> None:
        echo_agent(ada)
        make_dataset(ada, "one", [case("greets", "hello", expect="hello")])
        remote_model(ada, openai_server.base_url, api_key="k")

    await setup()
    openai_server.hang()
    judge = {"kind": "judge", "rubric": "Kind?", "model": "remote", "timeout_s": 0.5}
    body = {"agent": "echo", "dataset": "one", "evaluators": [{"kind": "contains"}, judge]}
    api = client_for(ada)
    started = await call(api, "post", "/api/evals/", body)
    done = await finished(api, started.json()["id"])
    [result] = results((await call(api, "get", f"/api/evals/{done['id']}/results/")).json())
    assert result["status"] == "error"  # the contains check passed; the judge never decided
    assert [v["status"] for v in result["verdicts"]] == ["passed", "error"]
    assert done["summary"]["pass_rate"] == 0.0
    openai_server.release()
