"""Memories through the API and through runs: written by an agent's remember tool in
one session and recalled in the next, searched with the database's full-text search,
edited and deleted by their owner only, and stored as the text they are."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.db import connection

from studio import services
from studio.memory.fulltext import has_fts
from studio.models import Event, Memory, ModelConfig, RunStatus, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, make_agent, make_session

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/api/memories/"


def write(user: User, text: str, agent: str = "helper") -> Any:
    return client_for(user).post(URL, {"agent": agent, "text": text}, format="json")


def texts(user: User, **query: str) -> list[str]:
    return [m["text"] for m in client_for(user).get(URL, query).json()]


def test_search_finds_memories_sharing_a_word_best_first_and_only_the_owners(
    ada: User, bob: User
) -> None:
    write(ada, "Ada's dog is called Rex")
    write(ada, "Ada drinks green tea; tea every morning")
    write(ada, "Ada likes tea", agent="other")
    write(bob, "Bob's dog is called Max")
    assert texts(ada, q="dog") == ["Ada's dog is called Rex"]
    assert texts(ada, q="tea", agent="helper") == ["Ada drinks green tea; tea every morning"]
    assert sorted(texts(ada, q='tea OR "; DROP')) == [
        "Ada drinks green tea; tea every morning",
        "Ada likes tea",
    ]
    assert texts(ada, q="cat") == []
    assert len(texts(ada)) == 3
    assert texts(bob, q="Rex tea") == []
    assert connection.vendor != "sqlite" or has_fts()  # searched by FTS5, not the fallback


def test_edit_replaces_the_text_and_search_follows_it(ada: User) -> None:
    memory_id = write(ada, "likes tea").json()["id"]
    edited = client_for(ada).patch(f"{URL}{memory_id}/", {"text": "likes coffee"}, format="json")
    assert (edited.status_code, edited.json()["text"]) == (200, "likes coffee")
    assert texts(ada, q="coffee") == ["likes coffee"]
    assert texts(ada, q="tea") == []


def test_another_users_memory_is_not_found_and_stays(ada: User, bob: User) -> None:
    memory_id = write(ada, "a secret").json()["id"]
    bob_client = client_for(bob)
    assert bob_client.get(f"{URL}{memory_id}/").status_code == 404
    assert bob_client.patch(f"{URL}{memory_id}/", {"text": "x"}, format="json").status_code == 404
    assert bob_client.delete(f"{URL}{memory_id}/").status_code == 404
    assert Memory.objects.get(pk=memory_id).text == "a secret"
    assert client_for(ada).delete(f"{URL}{memory_id}/").status_code == 204
    assert texts(ada, q="secret") == []


@pytest.mark.parametrize("text", ["", "   ", "x" * 2001])
def test_empty_or_oversize_text_is_refused_and_nothing_stored(ada: User, text: str) -> None:
    refused = write(ada, text)
    assert refused.status_code == 400
    assert Memory.objects.count() == 0


def test_markup_is_stored_as_the_text_it_is(ada: User) -> None:
    markup = "<script>alert(1)</script> <b>bold</b>"
    write(ada, markup)
    assert texts(ada, q="bold") == [markup]  # PostgreSQL indexes no tag or script body


def test_the_schema_documents_the_memories_api(ada: User) -> None:
    schema = client_for(ada).get("/api/schema/", {"format": "json"}).json()
    assert {"/api/memories/", "/api/memories/{id}/"} <= set(schema["paths"])


def _script(*steps: dict[str, Any]) -> dict[str, Any]:
    return {"script": list(steps)}


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args}]}


async def _run(session: Session, message: str) -> None:
    run = await sync_to_async(services.start_run)(session, message)
    finished = await execute_run(run)
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message


async def test_a_memory_remembered_in_one_session_is_recalled_in_the_next(ada: User) -> None:
    def setup() -> tuple[Session, Session]:
        make_agent(ada, memory={"tools": True})
        ModelConfig.objects.filter(owner=ada).update(
            options=_script(_call("remember", text="Ada's dog is called Rex"), {"text": "Noted."})
        )
        return make_session(ada), make_session(ada)

    first, second = await sync_to_async(setup)()
    await _run(first, "My dog is Rex")
    await ModelConfig.objects.filter(owner=ada).aupdate(
        options=_script(_call("recall", query="dog"), {"text": "{last_tool_result}"})
    )
    await _run(second, "What is my dog called?")

    memory = await Memory.objects.aget(owner=ada)
    assert (memory.agent, memory.session_id) == ("helper", first.pk)
    answers = [e.payload async for e in Event.objects.filter(session=second, type="agent_message")]
    assert answers[-1]["parts"][0]["text"].startswith("- Ada's dog is called Rex (id ")
    listed = await sync_to_async(client_for(ada).get)(URL, {"q": "Rex"})
    assert listed.json()[0]["session"] == str(first.pk)


async def test_a_turns_key_facts_are_saved_with_their_session_when_asked(ada: User) -> None:
    def setup() -> Session:
        make_agent(ada, memory={"tools": False, "save_at_end": True})
        return make_session(ada)

    session = await sync_to_async(setup)()
    await _run(session, "I am Ada and I live in Oslo")
    # The scripted model's summary digests the transcript: the user's message is in it.
    saved = [m async for m in Memory.objects.filter(owner=ada, session=session)]
    assert saved and all(m.agent == "helper" for m in saved)
    assert any("Oslo" in m.text for m in saved)
    listed = await sync_to_async(client_for(ada).get)(URL, {"q": "Oslo"})
    assert listed.json()[0]["session"] == str(session.pk)


def test_without_fts5_search_still_matches_words_of_the_owner(
    ada: User, bob: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the fallback is SQLite's")
    monkeypatch.setattr("studio.memory.fulltext.has_fts", lambda: False)
    write(ada, "Ada's dog is called Rex")
    write(ada, "Ada likes tea")
    write(bob, "Bob's dog is called Max")
    assert texts(ada, q="DOG cat") == ["Ada's dog is called Rex"]
