"""The prompt templates pages: signed-in owners only, previews shown as text, saving
versions, and deleting what no agent version renders."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from studio import services
from studio.models import PromptTemplate
from tests.studio.conftest import make_agent, signed_in

pytestmark = pytest.mark.django_db

LIST = "/templates/"


def test_every_page_needs_a_signed_in_user(ada: User) -> None:
    services.save_template(ada, "support", "Hi")
    for path in (LIST, f"{LIST}new/", f"{LIST}support/"):
        assert Client().get(path).status_code == 302
    assert Client().post(f"{LIST}support/delete/").status_code == 302
    assert PromptTemplate.objects.count() == 1


def test_another_users_template_answers_404_everywhere(ada: User, bob: User) -> None:
    services.save_template(ada, "support", "Ada's secret instruction")
    client = signed_in(bob)
    assert "Ada's secret" not in client.get(LIST).content.decode()
    assert client.get(f"{LIST}support/").status_code == 404
    assert client.post(f"{LIST}support/", {"source": "mine now", "save": "1"}).status_code == 404
    assert client.post(f"{LIST}support/delete/").status_code == 404
    assert list(PromptTemplate.objects.values_list("owner__username", "source")) == [
        ("ada", "Ada's secret instruction")
    ]


def test_preview_renders_sample_state_as_escaped_text_and_saves_nothing(ada: User) -> None:
    body = {
        "name": "support",
        "source": "You help {{ customer }}.",
        "sample_state": '{"customer": "<script>alert(1)</script>"}',
        "preview": "1",
    }
    response = signed_in(ada).post(f"{LIST}new/", body)
    html = response.content.decode()
    assert response.status_code == 200
    assert "You help &lt;script&gt;alert(1)&lt;/script&gt;." in html
    assert "<script>alert(1)" not in html
    assert not PromptTemplate.objects.exists()


def test_a_refused_template_shows_why_at_the_field(ada: User) -> None:
    body = {"name": "support", "source": "{% include 'x' %}", "save": "1"}
    response = signed_in(ada).post(f"{LIST}new/", body)
    assert response.status_code == 400
    assert "may not use include" in response.content.decode()
    bad_state = {"name": "s", "source": "Hi", "sample_state": "[1]", "preview": "1"}
    refused = signed_in(ada).post(f"{LIST}new/", bad_state)
    assert "a JSON object, like the session state" in refused.content.decode()
    assert not PromptTemplate.objects.exists()


def test_saving_on_a_templates_page_adds_the_next_version_of_that_template(ada: User) -> None:
    client = signed_in(ada)
    created = client.post(f"{LIST}new/", {"name": "support", "source": "v1", "save": "1"})
    assert created.status_code == 302 and created["Location"] == f"{LIST}support/"
    page = client.get(f"{LIST}support/").content.decode()
    assert "Save as version 2" in page
    # The page's own template is saved, whatever name the form carries.
    body = {"name": "other", "source": "v2", "description": "shorter", "save": "1"}
    client.post(f"{LIST}support/", body)
    assert list(PromptTemplate.objects.values_list("name", "version", "source")) == [
        ("support", 2, "v2"),
        ("support", 1, "v1"),
    ]


def test_deleting_a_template_an_agent_renders_is_refused_with_its_users(ada: User) -> None:
    services.save_template(ada, "support", "Hi")
    make_agent(ada, "helper", instruction="", instruction_template={"name": "support"})
    response = signed_in(ada).post(f"{LIST}support/delete/", follow=True)
    assert "used by: helper" in response.content.decode()
    assert PromptTemplate.objects.count() == 1


def test_a_sessions_timeline_names_the_template_version_its_agent_renders(ada: User) -> None:
    services.save_template(ada, "support", "Hi")
    agent = make_agent(ada, "helper", instruction="", instruction_template={"name": "support"})
    services.save_template(ada, "support", "Hello")
    session = services.start_session(ada, agent)
    html = signed_in(ada).get(f"/sessions/{session.pk}/").content.decode()
    assert 'Instruction from <a href="/templates/support/">support</a> v1' in html
