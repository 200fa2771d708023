"""The memories page: signed-in owners only, text shown as text, each memory linking to
the session that wrote it, search, edit and delete."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from studio import memory
from studio.models import Memory
from tests.studio.conftest import make_session, signed_in

pytestmark = pytest.mark.django_db

LIST = "/memories/"


def test_the_page_needs_a_signed_in_user(ada: User) -> None:
    kept = memory.add(ada.pk, "helper", "likes tea")
    assert Client().get(LIST).status_code == 302
    assert Client().post(f"{LIST}{kept.pk}/delete/").status_code == 302
    assert Memory.objects.count() == 1


def test_memories_show_as_text_with_a_link_to_their_session(ada: User) -> None:
    session = make_session(ada, title="Tea talk")
    memory.add(ada.pk, "helper", "<img src=x onerror=alert(1)> likes tea", session)
    memory.add(ada.pk, "helper", "has a dog")
    page = signed_in(ada).get(LIST).content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt; likes tea" in page
    assert "<img src=x" not in page
    assert f'href="/sessions/{session.pk}/"' in page and "Tea talk" in page
    assert '<span class="muted">No session</span>' in page
    assert "One added through the API, or whose session was deleted, has no session." in page
    searched = signed_in(ada).get(LIST, {"q": "dog"}).content.decode()
    assert "has a dog" in searched and "likes tea" not in searched


def test_edit_and_delete_change_only_the_owners_memory(ada: User, bob: User) -> None:
    kept = memory.add(ada.pk, "helper", "likes tea")
    bob_client = signed_in(bob)
    assert "likes tea" not in bob_client.get(LIST).content.decode()
    assert bob_client.post(f"{LIST}{kept.pk}/edit/", {"text": "mine"}).status_code == 404
    assert bob_client.post(f"{LIST}{kept.pk}/delete/").status_code == 404
    ada_client = signed_in(ada)
    assert ada_client.post(f"{LIST}{kept.pk}/edit/", {"text": "  "}).status_code == 302
    assert Memory.objects.get().text == "likes tea"
    ada_client.post(f"{LIST}{kept.pk}/edit/", {"text": "likes coffee"})
    assert Memory.objects.get().text == "likes coffee"
    ada_client.post(f"{LIST}{kept.pk}/delete/")
    assert Memory.objects.count() == 0
