from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.test import APIClient

from studio import services
from studio.errors import ConflictError
from studio.models import Agent, AgentVersion, ImmutableError, Session, spec_hash
from tests.studio.conftest import make_agent

pytestmark = pytest.mark.django_db


def test_an_agent_version_is_never_edited(ada: User) -> None:
    version = AgentVersion.objects.get(agent=make_agent(ada))
    version.note = "rewritten history"
    with pytest.raises(ImmutableError):
        version.save()
    assert AgentVersion.objects.get(pk=version.pk).note == ""


def test_the_content_hash_ignores_key_order() -> None:
    assert spec_hash({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == spec_hash(
        {"b": [1, {"d": 3, "c": 2}], "a": 1}
    )
    assert spec_hash({"a": 1}) != spec_hash({"a": 2})


def test_saving_specs_numbers_versions_consecutively(ada: User) -> None:
    agent = make_agent(ada)
    numbers = []
    for text in ["one", "two", "one"]:
        version, created = services.save_agent_spec(
            agent, {"name": "helper", "model": "scripted", "instruction": text}
        )
        numbers.append((version.number, created))
    assert numbers == [(2, True), (3, True), (4, True)]
    assert Agent.objects.get(pk=agent.pk).current_version == version


def test_a_session_needs_an_agent_with_a_version(ada: User) -> None:
    bare = Agent.objects.create(owner=ada, name="bare")
    with pytest.raises(ConflictError) as caught:
        services.start_session(ada, bare)
    assert caught.value.code == "agent_has_no_version"


def test_a_session_made_outside_studio_has_no_agent_to_run(api: APIClient, ada: User) -> None:
    session = Session.objects.create(owner=ada, key="external-1", app_name="elsewhere")
    response = api.post(f"/api/sessions/{session.pk}/messages/", {"text": "hi"})
    assert response.status_code == 409
    assert response.json()["code"] == "session_has_no_agent"
    listed = api.get(f"/api/sessions/{session.pk}/").json()
    assert (listed["agent"], listed["agent_name"], listed["agent_version"]) == (None, None, None)


def test_a_long_first_message_becomes_a_short_session_title(ada: User) -> None:
    session = services.start_session(ada, make_agent(ada))
    services.start_run(session, "word " * 40)
    session.refresh_from_db()
    assert len(session.title) == 80
    assert session.title.endswith("…")


def test_the_models_and_the_migrations_agree() -> None:
    call_command("makemigrations", "studio", "--check", "--dry-run", stdout=io.StringIO())
