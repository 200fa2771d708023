"""Forks through the API: forking with an edit and going on live (the model reads the
edited tool result), the tree, refusals with their codes, and owner scoping."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio.asgi import application
from studio.models import Run, RunStatus, Session
from tests.studio.conftest import client_for, make_agent, make_session, remote_model
from tests.support.forks import QUESTION, RESULT, recorded_session
from tests.support.live import (
    open_socket,
    run_manager,  # noqa: F401  (an autouse fixture)
    stored,
    watch,
)
from tests.support.openai_server import OpenAIServer

EDITED = "5"
REPLY = "1 + 1 is 5, says the calculator."


def calc_session(owner: User, base_url: str = "http://127.0.0.1:9/v1") -> Session:
    remote_model(owner, base_url)
    agent = make_agent(owner, "calc", model="remote", tools=[{"name": "calculator"}])
    return recorded_session(make_session(owner, agent, title="sums"))


def fork(user: User, session: Session, **body: Any) -> Any:
    return client_for(user).post(f"/api/sessions/{session.pk}/forks/", body, format="json")


@pytest.mark.django_db(transaction=True)
async def test_a_fork_at_an_edited_tool_result_goes_on_live_and_the_model_reads_the_edit(
    ada: User, bob: User
) -> None:
    with OpenAIServer(models=["fake-model"]) as server:
        server.reply(REPLY)
        parent = await sync_to_async(calc_session)(ada, server.base_url)
        await (await watch(application, parent, ada)).close()  # the executor's loop: this one
        response = await sync_to_async(fork)(ada, parent, seq=4, edit=EDITED, go_on=True)
        assert response.status_code == 201, response.content
        body = response.json()
        forked = await Session.objects.aget(pk=body["session"]["id"])
        assert (body["session"]["parent"], body["session"]["fork_seq"]) == (str(parent.pk), 4)
        assert body["run"]["resumed_from"] is not None and body["run"]["message"] == ""
        viewer = await watch(application, forked, ada)
        await viewer.until(
            lambda v: v.run_status == "succeeded" and v.status["run"]["id"] == body["run"]["id"]
        )
        await viewer.close()
        [request] = server.requests
        # Another user's socket to the fork closes as for a session that does not exist.
        foreign, connected = await open_socket(application, forked.pk, bob)
        assert connected
        assert await foreign.receive_output(timeout=5) == {"type": "websocket.close", "code": 4404}

    # The model read the record as the fork holds it: the question, and the edited result.
    said = [m["content"] for m in request.messages if m["role"] == "user"]
    assert said == [QUESTION]
    assert [m["content"] for m in request.messages if m["role"] == "tool"] == [EDITED]
    events = await stored(forked)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[3]["edited"] == {"what": "tool_result", "original": RESULT, "call_id": "c1"}
    added = events[4:]
    assert [e["type"] for e in added] == ["agent_start", "agent_message", "agent_end"]
    assert added[1]["parts"][0]["text"] == REPLY
    run = await Run.objects.aget(pk=body["run"]["id"])
    assert run.status == RunStatus.SUCCEEDED
    parent_events = await stored(parent)
    assert len(parent_events) == 10 and parent_events[3]["parts"][0]["result"] == RESULT


@pytest.mark.django_db
def test_the_fork_tree_lists_every_session_from_the_oldest_ancestor(ada: User) -> None:
    parent = calc_session(ada)
    first = fork(ada, parent, seq=4).json()["session"]
    second = fork(ada, Session.objects.get(pk=first["id"]), seq=2).json()["session"]
    body = client_for(ada).get(f"/api/sessions/{second['id']}/forks/").json()
    assert body["current"] == second["id"]
    assert [(s["id"], s["depth"], s["fork_seq"]) for s in body["sessions"]] == [
        (str(parent.pk), 0, None),
        (first["id"], 1, 4),
        (second["id"], 2, 2),
    ]
    assert body["sessions"][2]["parent"] == first["id"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"seq": 3}, 409, "open_tool_call"),
        ({"seq": 99}, 400, "invalid"),
        ({"seq": 2, "edit": "x"}, 400, "invalid"),
        ({"seq": 5, "go_on": True}, 409, "message_required"),
        ({"seq": 6, "agent_version": 7}, 400, "invalid"),
        ({"seq": 0}, 400, "invalid"),
    ],
)
def test_refused_forks_answer_their_code_and_keep_nothing(
    ada: User, body: dict[str, Any], status: int, code: str
) -> None:
    parent = calc_session(ada)
    response = fork(ada, parent, **body)
    assert (response.status_code, response.json()["code"]) == (status, code), response.content
    assert Session.objects.filter(parent=parent).count() == 0


@pytest.mark.django_db
def test_the_seq_problem_says_no_such_event(ada: User) -> None:
    response = fork(ada, calc_session(ada), seq=99)
    assert response.json()["errors"][0]["code"] == "no_such_event"
    assert "#99" in response.json()["errors"][0]["detail"]


@pytest.mark.django_db
def test_another_users_session_cannot_be_forked_read_or_continued(ada: User, bob: User) -> None:
    parent = calc_session(ada)
    mine = fork(ada, parent, seq=6).json()["session"]["id"]
    for url, method, body in [
        (f"/api/sessions/{parent.pk}/forks/", "post", {"seq": 6}),
        (f"/api/sessions/{parent.pk}/forks/", "get", None),
        (f"/api/sessions/{mine}/continue/", "post", {"message": "hi"}),
    ]:
        response = getattr(client_for(bob), method)(url, body, format="json")
        assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert Session.objects.filter(owner=bob).count() == 0


@pytest.mark.django_db
def test_continue_with_a_message_queues_a_new_turn(ada: User, recording_executor: Any) -> None:
    forked = fork(ada, calc_session(ada), seq=6).json()["session"]["id"]
    refused = client_for(ada).post(f"/api/sessions/{forked}/continue/", {}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (409, "message_required")
    response = client_for(ada).post(
        f"/api/sessions/{forked}/continue/", {"message": "and 2 + 2?"}, format="json"
    )
    assert response.status_code == 202, response.content
    assert (response.json()["message"], response.json()["status"]) == ("and 2 + 2?", "queued")


@pytest.mark.django_db
def test_the_schema_lists_the_fork_endpoints(ada: User) -> None:
    paths = client_for(ada).get("/api/schema/", {"format": "json"}).json()["paths"]
    assert {"post", "get"} <= set(paths["/api/sessions/{id}/forks/"])
    assert "post" in paths["/api/sessions/{id}/continue/"]
