from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from studio import services
from studio.models import Agent, AgentVersion, Session
from tests.studio.conftest import make_agent, make_session, results, scripted_model

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _ada_has_a_scripted_model(ada: User) -> None:
    scripted_model(ada)


def spec(name: str = "calc", **extra: Any) -> dict[str, Any]:
    return {"name": name, "model": "scripted", "tools": [{"name": "calculator"}], **extra}


def create(api: APIClient, name: str = "calc", **extra: Any) -> dict[str, Any]:
    response = api.post("/api/agents/", {"name": name, "spec": spec(name), **extra})
    assert response.status_code == 201, response.json()
    return dict(response.json())


def test_creating_an_agent_stores_its_spec_as_version_one(api: APIClient) -> None:
    body = create(api, description="adds numbers", note="first")
    assert (body["name"], body["description"], body["current_version"]) == (
        "calc",
        "adds numbers",
        1,
    )
    assert body["spec"] == spec()
    version = AgentVersion.objects.get(agent_id=body["id"])
    assert (version.number, version.note, len(version.content_hash)) == (1, "first", 64)


def test_agents_list_and_detail(api: APIClient) -> None:
    created = create(api)
    create(api, "another")
    assert [a["name"] for a in results(api.get("/api/agents/").json())] == ["another", "calc"]
    assert api.get(f"/api/agents/{created['id']}/").json()["spec"] == spec()


def test_saving_a_changed_spec_adds_a_version_and_an_unchanged_one_does_not(
    api: APIClient,
) -> None:
    url = f"/api/agents/{create(api)['id']}/"
    assert api.patch(url, {"spec": spec(), "note": "same"}).json()["current_version"] == 1
    changed = api.patch(url, {"spec": spec(instruction="Be brief."), "note": "briefer"}).json()
    assert changed["current_version"] == 2
    assert api.patch(url, {"description": "no spec change"}).json()["current_version"] == 2
    versions = api.get(f"{url}versions/").json()
    assert [(v["number"], v["note"]) for v in versions["results"]] == [(2, "briefer"), (1, "")]
    first = api.get(f"{url}versions/1/").json()
    assert first["spec"] == spec()
    assert api.get(f"{url}versions/9/").status_code == 404


def test_a_spec_that_spells_out_defaults_equals_the_one_that_omits_them(api: APIClient) -> None:
    url = f"/api/agents/{create(api)['id']}/"
    verbose = spec(type="llm", description="", tools=[{"name": "calculator", "settings": {}}])
    assert api.patch(url, {"spec": verbose}).json()["current_version"] == 1


def test_put_replaces_name_description_and_spec(api: APIClient) -> None:
    url = f"/api/agents/{create(api)['id']}/"
    response = api.put(url, {"name": "calc2", "description": "d", "spec": spec("calc2")})
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["current_version"]) == ("calc2", 2)


def test_a_new_agent_needs_a_spec(api: APIClient) -> None:
    response = api.post("/api/agents/", {"name": "empty"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "spec"


@pytest.mark.parametrize(
    ("bad_spec", "path"),
    [
        ({"name": "calc", "model": "gpt-nope"}, "spec.model"),
        ({"name": "calc", "model": "scripted", "tools": [{"name": "rm_rf"}]}, "spec.tools.0.name"),
        (
            {
                "name": "calc",
                "model": "scripted",
                "tools": [{"name": "calculator", "settings": {"x": 1}}],
            },
            "spec.tools.0.settings",
        ),
        ({"name": "calc", "type": "sequential", "sub_agents": []}, "spec.sub_agents"),
        (
            {
                "name": "calc",
                "type": "sequential",
                "sub_agents": [{"name": "a b", "model": "scripted"}],
            },
            "spec.sub_agents.0.name",
        ),
        (
            {"name": "calc", "model": "scripted", "sub_agents": [{"ref": "nobody"}]},
            "spec.sub_agents.0.ref",
        ),
        ({"name": "calc", "model": "scripted", "surprise": True}, "spec.surprise"),
        ("not an object", "spec"),
    ],
)
def test_spec_errors_point_at_the_path_inside_the_spec(
    api: APIClient, bad_spec: Any, path: str
) -> None:
    response = api.post("/api/agents/", {"name": "calc", "spec": bad_spec})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert path in [e["path"] for e in body["errors"]], body
    assert body["detail"].startswith(body["errors"][0]["path"])


def test_a_spec_naming_another_users_model_or_agent_is_rejected(api: APIClient, bob: User) -> None:
    scripted_model(bob, "bobs-model")
    make_agent(bob, "bobs_agent")
    model_ref = api.post("/api/agents/", {"name": "a", "spec": spec("a", model="bobs-model")})
    assert model_ref.status_code == 400
    assert model_ref.json()["errors"][0]["path"] == "spec.model"
    agent_ref = api.post(
        "/api/agents/", {"name": "b", "spec": spec("b", sub_agents=[{"ref": "bobs_agent"}])}
    )
    assert agent_ref.status_code == 400
    assert agent_ref.json()["errors"][0]["path"] == "spec.sub_agents.0.ref"


def test_a_spec_may_reference_the_owners_other_agents_by_name(api: APIClient) -> None:
    create(api, "helper_agent")
    coordinator = spec("coord", sub_agents=[{"ref": "helper_agent"}])
    response = api.post("/api/agents/", {"name": "coord", "spec": coordinator})
    assert response.status_code == 201, response.json()


def test_an_agent_referencing_itself_is_a_cycle(api: APIClient) -> None:
    url = f"/api/agents/{create(api, 'selfish')['id']}/"
    response = api.patch(url, {"spec": spec("selfish", sub_agents=[{"ref": "selfish"}])})
    assert response.status_code == 400
    assert any("cycle" in e["detail"] for e in response.json()["errors"])


@pytest.mark.parametrize("name", ["has space", "dotted.name", "", "x" * 65, "user name"])
def test_agent_names_are_identifiers_other_specs_can_reference(api: APIClient, name: str) -> None:
    response = api.post("/api/agents/", {"name": name, "spec": spec()})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "name"


def test_agent_names_are_unique_per_owner(api: APIClient) -> None:
    create(api)
    again = api.post("/api/agents/", {"name": "calc", "spec": spec()})
    assert again.status_code == 400
    assert again.json()["errors"][0]["code"] == "unique"


def test_deleting_an_agent_deletes_its_versions_and_sessions_cancelling_their_runs(
    api: APIClient, ada: User, django_capture_on_commit_callbacks: Any, recording_executor: Any
) -> None:
    agent = Agent.objects.get(pk=create(api)["id"])
    session = make_session(ada, agent)
    run = services.start_run(session, "hi")
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/api/agents/{agent.pk}/").status_code == 204
    assert recording_executor.cancelled == [run.pk]
    assert not AgentVersion.objects.filter(agent_id=agent.pk).exists()
    assert not Session.objects.filter(pk=session.pk).exists()


def test_an_exported_agent_imports_as_a_new_agent(api: APIClient, ada: User, bob: User) -> None:
    created = create(api, description="adds")
    export = api.get(f"/api/agents/{created['id']}/export/")
    assert export.status_code == 200
    assert 'filename="calc.agent.json"' in export["Content-Disposition"]
    document = export.json()
    assert (document["format"], document["format_version"], document["spec"]) == (
        "studio.agent",
        1,
        spec(),
    )
    scripted_model(bob)
    bob_api = APIClient()
    bob_api.force_authenticate(bob)
    imported = bob_api.post("/api/agents/import/", document)
    assert imported.status_code == 201, imported.json()
    body = imported.json()
    assert (body["name"], body["description"], body["spec"], body["current_version"]) == (
        "calc",
        "adds",
        spec(),
        1,
    )
    assert AgentVersion.objects.get(agent_id=body["id"]).note == "imported"


def test_importing_needs_the_models_it_names_and_a_free_name(api: APIClient) -> None:
    document = {"format": "studio.agent", "format_version": 1, "name": "calc", "spec": spec()}
    document["spec"] = spec(model="missing")
    missing = api.post("/api/agents/import/", document)
    assert (missing.status_code, missing.json()["errors"][0]["path"]) == (400, "spec.model")
    create(api)
    taken = api.post("/api/agents/import/", {**document, "spec": spec()})
    assert (taken.status_code, taken.json()["errors"][0]["path"]) == (400, "name")


def test_importing_something_that_is_not_an_agent_document_is_rejected(api: APIClient) -> None:
    response = api.post(
        "/api/agents/import/", {"format": "other", "format_version": 7, "name": "x", "spec": {}}
    )
    assert response.status_code == 400
    assert {e["path"] for e in response.json()["errors"]} >= {"format", "format_version"}


def test_an_agent_other_agents_reference_can_be_neither_renamed_nor_deleted(
    api: APIClient,
) -> None:
    helper = create(api, "helper_agent")
    api.post(
        "/api/agents/",
        {"name": "coord", "spec": spec("coord", sub_agents=[{"ref": "helper_agent"}])},
    )
    url = f"/api/agents/{helper['id']}/"
    renamed = api.patch(url, {"name": "renamed"})
    assert (renamed.status_code, renamed.json()["errors"][0]["code"]) == (400, "in_use")
    deleted = api.delete(url)
    assert (deleted.status_code, deleted.json()["code"]) == (409, "agent_in_use")
    assert "coord" in deleted.json()["detail"]
