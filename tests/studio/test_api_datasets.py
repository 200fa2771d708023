"""``/api/datasets/``: datasets of eval cases in immutable versions, through the API,
each user's own; files imported (JSONL, CSV, ADK eval sets) and exported; a session's
turn added as a case, its expectation prefilled from a real run of a scripted agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from studio import services
from studio.models import Dataset, DatasetVersion, EvalRun, ImmutableError, Run, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, error_paths, make_agent, make_session
from tests.support.live import script_model

EVALSET = Path(__file__).parents[1] / "support" / "evals" / "home_automation.evalset.json"


def case(name: str, text: str = "hi", **expect: Any) -> dict[str, Any]:
    return {"name": name, "input": {"turns": [text]}, "expect": expect}


def create(user: User, name: str = "smoke", cases: list[dict[str, Any]] | None = None) -> Any:
    body = {"name": name, "cases": cases if cases is not None else [case("a"), case("b")]}
    response = client_for(user).post("/api/datasets/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def upload(user: User, content: bytes, filename: str, **fields: Any) -> Any:
    file = SimpleUploadedFile(filename, content)
    return client_for(user).post(
        "/api/datasets/import/", {"file": file, **fields}, format="multipart"
    )


def names(user: User, dataset_id: str, number: int | None = None) -> list[str]:
    url = f"/api/datasets/{dataset_id}/" + (f"versions/{number}/" if number else "cases/")
    response = client_for(user).get(url)
    assert response.status_code == 200, response.content
    return [c["name"] for c in response.json()["cases"]]


# -- CRUD and versions -----------------------------------------------------------------


@pytest.mark.django_db
def test_a_dataset_is_created_listed_renamed_and_described(ada: User) -> None:
    made = create(ada, cases=[case("a", final_output="hello")])
    api = client_for(ada)

    assert (made["version"], made["cases"]) == (1, 1)
    assert [d["name"] for d in api.get("/api/datasets/").json()] == ["smoke"]
    renamed = api.patch(
        f"/api/datasets/{made['id']}/", {"name": "smoke2", "description": "d"}, format="json"
    )
    assert renamed.status_code == 200, renamed.content
    assert (renamed.json()["name"], renamed.json()["description"]) == ("smoke2", "d")
    create(ada, "other", [])
    taken = api.patch(f"/api/datasets/{made['id']}/", {"name": "other"}, format="json")
    assert error_paths(taken) == {"name": "you already have a dataset named 'other'"}
    again = api.post("/api/datasets/", {"name": "other"}, format="json")
    assert again.status_code == 400
    assert Dataset.objects.filter(owner=ada).count() == 2


@pytest.mark.django_db
def test_each_change_of_cases_is_a_new_version_and_old_ones_stay(ada: User) -> None:
    made = create(ada)
    api = client_for(ada)
    base = f"/api/datasets/{made['id']}/"

    added = api.post(base + "cases/", case("c", "third"), format="json")
    assert added.status_code == 201, added.content
    assert (added.json()["version"], added.json()["dataset"]["cases"]) == (2, 3)
    replaced = api.put(base + "cases/a/", case("a2", final_output="x"), format="json")
    assert replaced.json()["version"] == 3
    removed = api.delete(base + "cases/b/")
    assert removed.json()["version"] == 4

    assert names(ada, made["id"]) == ["a2", "c"]
    assert names(ada, made["id"], 1) == ["a", "b"]
    assert names(ada, made["id"], 2) == ["a", "b", "c"]
    versions = api.get(base + "versions/").json()
    assert [(v["number"], v["cases"]) for v in versions] == [(4, 2), (3, 3), (2, 3), (1, 2)]
    assert versions[0]["note"] == "removed b"
    first = DatasetVersion.objects.get(dataset_id=made["id"], number=1)
    with pytest.raises(ImmutableError):
        first.save()


@pytest.mark.django_db
def test_bad_cases_are_refused_with_their_path_and_store_nothing(ada: User) -> None:
    made = create(ada)
    api = client_for(ada)
    base = f"/api/datasets/{made['id']}/"

    empty = api.post(base + "cases/", {"name": "x", "input": {"turns": []}}, format="json")
    assert list(error_paths(empty)) == ["case.input.turns"]
    extra = api.post(base + "cases/", {**case("x"), "colour": 1}, format="json")
    assert list(error_paths(extra)) == ["case.colour"]
    scalar = api.post(base + "cases/", {"name": "x", "input": 3}, format="json")
    assert error_paths(scalar) == {"case.input": "Input should be a JSON object"}
    nul = api.post(base + "cases/", case("x", "a\x00b"), format="json")
    assert nul.status_code == 400
    taken = api.post(base + "cases/", case("a"), format="json")
    assert (taken.status_code, taken.json()["code"]) == (409, "case_name_taken")
    clash = api.put(base + "cases/a/", case("b"), format="json")
    assert error_paths(clash) == {"case.1.name": "the name 'b' is taken by case 0"}
    assert api.put(base + "cases/nope/", case("nope"), format="json").status_code == 404
    assert api.delete(base + "cases/nope/").status_code == 404
    twice = api.post(
        "/api/datasets/", {"name": "dup", "cases": [case("a"), case("a")]}, format="json"
    )
    assert error_paths(twice) == {"cases.1.name": "the name 'a' is taken by case 0"}

    assert DatasetVersion.objects.filter(dataset_id=made["id"]).count() == 1
    assert not Dataset.objects.filter(name="dup").exists()


@pytest.mark.django_db
def test_a_dataset_an_eval_run_pins_cannot_be_deleted(ada: User) -> None:
    made = create(ada)
    version = DatasetVersion.objects.get(dataset_id=made["id"], number=1)
    agent = make_agent(ada)
    assert agent.current_version is not None
    pinned = EvalRun.objects.create(
        owner=ada, agent_version=agent.current_version, dataset_version=version
    )
    api = client_for(ada)

    refused = api.delete(f"/api/datasets/{made['id']}/")
    assert (refused.status_code, refused.json()["code"]) == (409, "dataset_in_use")
    assert Dataset.objects.filter(pk=made["id"]).exists()
    # Changing its cases is fine: the run keeps its version.
    changed = api.post(f"/api/datasets/{made['id']}/cases/", case("c"), format="json")
    assert changed.status_code == 201
    pinned.delete()
    assert api.delete(f"/api/datasets/{made['id']}/").status_code == 204
    assert not DatasetVersion.objects.filter(dataset_id=made["id"]).exists()


@pytest.mark.django_db
def test_other_users_get_404_and_strangers_401(ada: User, bob: User) -> None:
    made = create(ada)
    base = f"/api/datasets/{made['id']}/"
    bobs = client_for(bob)
    for response in (
        bobs.get(base),
        bobs.patch(base, {"name": "mine"}, format="json"),
        bobs.delete(base),
        bobs.get(base + "versions/"),
        bobs.get(base + "versions/1/"),
        bobs.get(base + "cases/"),
        bobs.post(base + "cases/", case("z"), format="json"),
        bobs.put(base + "cases/a/", case("a"), format="json"),
        bobs.delete(base + "cases/a/"),
        bobs.get(base + "export/"),
    ):
        assert response.status_code == 404, response.content
    into = upload(bob, b'{"name": "x", "input": {"turns": ["x"]}}\n', "x.jsonl", dataset=made["id"])
    assert error_paths(into) == {"dataset": f'Invalid pk "{made["id"]}" - object does not exist.'}
    assert bobs.get("/api/datasets/").json() == []
    assert client_for(None).get("/api/datasets/").status_code == 401
    assert client_for(None).get(base).status_code == 401
    assert names(ada, made["id"]) == ["a", "b"]


# -- import and export -----------------------------------------------------------------


@pytest.mark.django_db
def test_an_adk_evalset_imports_as_a_dataset_then_as_its_next_version(ada: User) -> None:
    response = upload(ada, EVALSET.read_bytes(), EVALSET.name)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["format"], body["cases"], body["created"]) == ("adk", 3, True)
    assert body["dataset"]["name"] == "home_automation_agent_light_on_off_set"
    dataset_id = body["dataset"]["id"]
    cases = client_for(ada).get(f"/api/datasets/{dataset_id}/cases/").json()["cases"]
    assert cases[1]["input"] == {
        "turns": ["Is the kitchen light on?", "Switch it on, please."],
        "state": {"home": "flat-3", "units": "metric"},
    }
    assert cases[0]["expect"]["tool_calls"] == [
        {
            "name": "set_device_info",
            "args": {"location": "Bedroom", "device_id": "device_2", "status": "OFF"},
        }
    ]

    again = upload(ada, EVALSET.read_bytes(), "upload.bin", format="adk", dataset=dataset_id)
    assert (again.status_code, again.json()["version"], again.json()["created"]) == (200, 2, False)


@pytest.mark.django_db
def test_jsonl_and_csv_files_import_by_their_name(ada: User) -> None:
    jsonl = b'{"name": "a", "input": {"turns": ["hi"]}, "expect": {"final_output": "hello"}}\n'
    from_jsonl = upload(ada, jsonl, "greetings.jsonl")
    assert from_jsonl.status_code == 201, from_jsonl.content
    assert (from_jsonl.json()["dataset"]["name"], from_jsonl.json()["format"]) == (
        "greetings",
        "jsonl",
    )
    csv = b'name,input,expected_output,tags\nsum,"1 + 1?",2,"math,smoke"\n'
    from_csv = upload(ada, csv, "My sums (v2).csv", name="sums")
    assert from_csv.status_code == 201, from_csv.content
    dataset = Dataset.objects.get(owner=ada, name="sums")
    assert dataset.current_version is not None
    assert dataset.current_version.cases[0]["tags"] == ["math", "smoke"]
    derived = upload(ada, csv, "My sums (v2).csv")
    assert derived.json()["dataset"]["name"] == "My-sums-v2"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "filename", "detail"),
    [
        (
            b'{"name": "a", "input": {"turns": ["x"]}}\n{"name": "b"}\n',
            "x.jsonl",
            "file: line 2: input: Field required",
        ),
        (b"name,prompt\nx,y\n", "x.csv", "file: line 1: unknown column 'prompt'"),
        (
            b'{"eval_cases": [{"eval_id": "e", "conversation": []}]}',
            "x.evalset.json",
            "file: eval_cases[0].conversation: no invocations",
        ),
        (
            b'{"name": "a", "input": {"turns": ["\\u0000"]}}\n',
            "x.jsonl",
            "file: case 1: NUL and lone surrogate characters are not allowed",
        ),
        (b"\n\n", "x.jsonl", "file: the file has no cases"),
    ],
)
def test_a_bad_file_is_a_400_that_says_where_and_stores_nothing(
    ada: User, content: bytes, filename: str, detail: str
) -> None:
    made = create(ada)
    response = upload(ada, content, filename)
    assert response.status_code == 400, response.content
    assert response.json()["detail"].startswith(detail)
    into = upload(ada, content, filename, dataset=made["id"])
    assert into.status_code == 400
    assert Dataset.objects.filter(owner=ada).count() == 1
    assert DatasetVersion.objects.filter(dataset__owner=ada).count() == 1


@pytest.mark.django_db
def test_export_downloads_jsonl_that_imports_back_the_same(ada: User) -> None:
    upload(ada, EVALSET.read_bytes(), EVALSET.name)
    dataset = Dataset.objects.get(owner=ada)
    response = client_for(ada).get(f"/api/datasets/{dataset.pk}/export/")

    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl"
    assert response["Content-Disposition"] == (
        'attachment; filename="home_automation_agent_light_on_off_set.v1.jsonl"'
    )
    assert len(response.content.splitlines()) == 3
    client_for(ada).delete(f"/api/datasets/{dataset.pk}/cases/small_talk/")
    old = client_for(ada).get(f"/api/datasets/{dataset.pk}/export/", {"version": 1})
    assert old.content == response.content
    assert old["Content-Disposition"].endswith('.v1.jsonl"')
    current = client_for(ada).get(f"/api/datasets/{dataset.pk}/export/")
    assert len(current.content.splitlines()) == 2
    missing = client_for(ada).get(f"/api/datasets/{dataset.pk}/export/", {"version": 9})
    assert missing.status_code == 404
    assert client_for(ada).get(f"/api/datasets/{dataset.pk}/export/?version=x").status_code == 400
    back = upload(ada, response.content, "copy.jsonl")
    assert back.status_code == 201, back.content
    copy = Dataset.objects.get(owner=ada, name="copy")
    first = DatasetVersion.objects.get(dataset=dataset, number=1)
    assert copy.current_version is not None
    assert copy.current_version.cases == first.cases


# -- a session's turn as a case --------------------------------------------------------


def calculator_agent(owner: User) -> Any:
    script = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "(12 + 30) * 2"}}]},
        {"text": "The answer is {last_tool_result}."},
    ]
    script_model(owner, "calc_model", script + script)
    spec = {
        "name": "calc",
        "model": "calc_model",
        "tools": [{"name": "calculator"}],
        "output_key": "answer",
    }
    return services.create_agent(owner, name="calc", spec=spec)


async def ran(session: Session, text: str) -> Run:
    return await execute_run(await sync_to_async(services.start_run)(session, text))


@pytest.mark.django_db(transaction=True)
async def test_a_turn_becomes_a_case_prefilled_from_what_the_run_did(ada: User, bob: User) -> None:
    agent = await sync_to_async(calculator_agent)(ada)
    session = await sync_to_async(make_session)(ada, agent)
    first = await ran(session, "What is (12 + 30) * 2?")
    second = await ran(session, "And (12 + 30) * 2 again?")
    assert (first.status, second.status) == ("succeeded", "succeeded")
    url = f"/api/sessions/{session.pk}/dataset-cases/"

    def post(user: User, body: dict[str, Any]) -> Any:
        return client_for(user).post(url, body, format="json")

    added = await sync_to_async(post)(ada, {"dataset": "from-sessions"})
    assert added.status_code == 201, added.content
    body = added.json()
    assert (body["created"], body["version"], body["dataset"]["name"]) == (
        True,
        2,
        "from-sessions",
    )
    # The last ended run, from the state the first run left.
    assert body["case"]["name"] == "and-12-30-2-again"
    assert body["case"]["input"] == {
        "turns": ["And (12 + 30) * 2 again?"],
        "state": {"answer": "The answer is 84."},
    }
    assert body["case"]["expect"]["final_output"] == "The answer is 84."
    assert body["case"]["expect"]["tool_calls"] == [
        {"name": "calculator", "args": {"expression": "(12 + 30) * 2"}}
    ]
    assert body["case"]["expect"]["state"] == {"answer": "The answer is 84."}

    chosen = await sync_to_async(post)(
        ada, {"dataset": body["dataset"]["id"], "run": str(first.pk)}
    )
    assert chosen.status_code == 201, chosen.content
    assert chosen.json()["case"]["input"] == {"turns": ["What is (12 + 30) * 2?"], "state": {}}
    named = await sync_to_async(post)(ada, {"dataset": "from-sessions", "run": str(first.pk)})
    assert named.json()["case"]["name"] == "what-is-12-30-2-2"
    taken = await sync_to_async(post)(ada, {"dataset": "from-sessions", "name": "what-is-12-30-2"})
    assert taken.status_code == 409

    assert (await sync_to_async(post)(bob, {"dataset": "x"})).status_code == 404
    other = await sync_to_async(make_session)(ada, agent)
    foreign = await sync_to_async(client_for(ada).post)(
        f"/api/sessions/{other.pk}/dataset-cases/", {"dataset": "x"}, format="json"
    )
    assert (foreign.status_code, foreign.json()["code"]) == (409, "no_ended_run")
    wrong_run = await sync_to_async(client_for(ada).post)(
        f"/api/sessions/{other.pk}/dataset-cases/",
        {"dataset": "x", "run": str(first.pk)},
        format="json",
    )
    assert wrong_run.status_code == 404
    assert (await sync_to_async(client_for(None).post)(url, {"dataset": "x"})).status_code == 401
    assert not await Dataset.objects.filter(name="x").aexists()
    stored = await Dataset.objects.select_related("current_version").aget(name="from-sessions")
    assert stored.current_version is not None
    assert [c["name"] for c in stored.current_version.cases] == [
        "and-12-30-2-again",
        "what-is-12-30-2",
        "what-is-12-30-2-2",
    ]
    assert json.dumps(stored.current_version.cases)
