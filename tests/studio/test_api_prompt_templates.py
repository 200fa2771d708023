"""Prompt templates through the API: versions, the sandbox's refusals, owner scoping,
pinning into agent versions, runs rendering them, previews and deletion."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio import services
from studio.models import AgentVersion, PromptTemplate, Run, RunStatus, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, error_paths, make_agent, make_session, remote_model
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/prompt-templates/"


def save(user: User, name: str, source: str, **extra: Any) -> Any:
    return client_for(user).post(URL, {"name": name, "source": source, **extra}, format="json")


def test_each_save_is_a_new_version_and_the_list_shows_the_latest(ada: User) -> None:
    first = save(ada, "support", "You help {{ customer }}.", description="v1")
    second = save(ada, "support", "You help {{ customer }}. Be brief.")
    save(ada, "other", "Hi")
    assert (first.status_code, first.json()["version"]) == (201, 1)
    assert (second.status_code, second.json()["version"]) == (201, 2)

    listed = client_for(ada).get(URL).json()
    assert [(t["name"], t["version"]) for t in listed] == [("other", 1), ("support", 2)]
    versions = client_for(ada).get(f"{URL}support/").json()
    assert [(v["version"], v["description"]) for v in versions] == [(2, ""), (1, "v1")]
    assert versions[1]["source"] == "You help {{ customer }}."


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("{% include '/etc/passwd' %}", "may not use include"),
        ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "may not use macro"),
        ("{{ x|attr('__class__') }}", "No filter named 'attr'"),
        ("{% if %}", "does not compile"),
    ],
)
def test_a_template_that_cannot_be_bounded_is_refused_and_nothing_stored(
    ada: User, source: str, says: str
) -> None:
    response = save(ada, "bad", source)
    assert response.status_code == 400
    assert says in error_paths(response)["source"]
    assert not PromptTemplate.objects.filter(name="bad").exists()


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "unsafe"),
        ("{{ 'a' * 100000000 }}", "at most 10000 items"),
        ("{{ '{0.__class__}'.format(1) }}", "str.format is not allowed"),
    ],
)
def test_what_escapes_the_sandbox_when_rendered_is_refused_in_the_preview(
    ada: User, source: str, says: str
) -> None:
    preview = client_for(ada).post(f"{URL}preview/", {"source": source}, format="json")
    assert preview.status_code == 400
    assert says in error_paths(preview)["source"]


def test_a_bad_name_is_refused_with_the_rule(ada: User) -> None:
    response = save(ada, "no spaces", "Hi")
    assert response.status_code == 400
    assert "letters, digits" in error_paths(response)["name"]


def test_the_preview_renders_sample_state_as_text(ada: User) -> None:
    body = {
        "source": "Hello {{ name }} {{ state['a b'] }}",
        "state": {"name": "<b>x</b>", "a b": 1},
    }
    response = client_for(ada).post(f"{URL}preview/", body, format="json")
    assert response.status_code == 200
    assert response.json() == {"text": "Hello <b>x</b> 1"}  # text: the page shows it as text
    missing = client_for(ada).post(f"{URL}preview/", {"source": "{{ name }}"}, format="json")
    assert "'name' is undefined" in error_paths(missing)["source"]


def test_another_user_sees_uses_and_deletes_none_of_them(ada: User, bob: User) -> None:
    save(ada, "support", "You help.")
    assert client_for(bob).get(URL).json() == []
    assert client_for(bob).get(f"{URL}support/").status_code == 404
    assert client_for(bob).delete(f"{URL}support/").status_code == 404
    spec = {"name": "b", "model": "scripted", "instruction_template": {"name": "support"}}
    response = client_for(bob).post("/api/agents/", {"name": "b", "spec": spec}, format="json")
    assert response.status_code == 400
    assert error_paths(response)["spec.instruction_template.name"] == (
        "no prompt template 'support'"
    )
    assert PromptTemplate.objects.filter(owner=ada).count() == 1


def test_an_agent_version_pins_the_latest_version_and_keeps_it(ada: User) -> None:
    save(ada, "support", "v1 text")
    save(ada, "support", "v2 text")
    agent = make_agent(ada, "helper", instruction="", instruction_template={"name": "support"})
    assert agent.current_version is not None
    assert agent.current_version.spec["instruction_template"] == {"name": "support", "version": 2}
    save(ada, "support", "v3 text")
    [version] = AgentVersion.objects.filter(agent=agent)
    assert version.spec["instruction_template"]["version"] == 2


async def test_a_run_sends_the_pinned_template_rendered_with_the_session_state(
    ada: User,
) -> None:
    with OpenAIServer(models=["fake-model"]) as server:
        server.reply("done")

        @sync_to_async
        def setup() -> Run:
            remote_model(ada, server.base_url)
            save(ada, "support", "You help {{ customer }} ({{ tier }}).")
            spec = {"instruction": "", "instruction_template": {"name": "support"}}
            agent = make_agent(ada, "helper", model="remote", **spec)
            save(ada, "support", "A later text that this version does not use.")
            session = make_session(ada, agent)
            Session.objects.filter(pk=session.pk).update(state={"customer": "Ada", "tier": "gold"})
            return services.start_run(session, "hi")

        finished = await execute_run(await setup())
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    [request] = server.chat_requests
    assert request.messages[0] == {"role": "system", "content": "You help Ada (gold)."}


def test_a_template_an_agent_version_renders_cannot_be_deleted(ada: User) -> None:
    save(ada, "support", "You help.")
    save(ada, "spare", "Unused.")
    make_agent(ada, "helper", instruction="", instruction_template={"name": "support"})
    refused = client_for(ada).delete(f"{URL}support/")
    assert refused.status_code == 409
    assert refused.json()["code"] == "template_in_use"
    assert "helper" in refused.json()["detail"]
    assert client_for(ada).delete(f"{URL}spare/").status_code == 204
    assert list(PromptTemplate.objects.values_list("name", flat=True)) == ["support"]


def test_the_preview_renders_a_stored_template_by_name_and_version(ada: User, bob: User) -> None:
    save(ada, "support", "v1 for {{ who }}")
    save(ada, "support", "v2 for {{ who }}")
    url, state = f"{URL}preview/", {"who": "Ada"}

    def preview(user: User, **body: Any) -> Any:
        return client_for(user).post(url, {"state": state, **body}, format="json")

    assert preview(ada, name="support").json() == {"text": "v2 for Ada"}
    assert preview(ada, name="support", version=1).json() == {"text": "v1 for Ada"}
    assert preview(ada, name="support", version=3).status_code == 404
    assert preview(bob, name="support").status_code == 404
    both = preview(ada, name="support", source="x")
    assert "not both" in error_paths(both)["source"]
    assert "needs a template name" in error_paths(preview(ada, source="x", version=1))["version"]
