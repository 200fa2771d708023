"""Asking the user through Studio: a run whose agent asks a question waits (the session
says so, the status frame says ``answer``) and goes on with the answer typed over the
socket or sent to the API; answers for no waiting question are conflicts; the question
is owner-scoped."""

from __future__ import annotations

import io
from datetime import datetime, timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.management import call_command

from agents_core.approvals import MAX_ANSWER_CHARS
from studio.agents.demo import DEMO_MODEL
from studio.asgi import application
from studio.models import ModelConfig, Session
from tests.studio.conftest import client_for, signed_in
from tests.support.live import (
    Viewer,
    new_session,
    open_socket,
    run_manager,  # noqa: F401  (an autouse fixture)
    scripted_agent,
    stored,
    watch,
)

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = [
    {"tool_calls": [{"name": "ask_user", "args": {"question": "Which city?"}}]},
    {"text": "Booked for {last_tool_result}."},
]


async def booking_session(owner: User) -> Session:
    await sync_to_async(scripted_agent)(owner, "booker", SCRIPT, tools=[{"name": "ask_user"}])
    return await new_session(owner, "booker")


async def ask(viewer: Viewer) -> dict[str, Any]:
    await viewer.send({"type": "user_message", "text": "book me a trip"})
    await viewer.until(lambda v: bool(v.events_of_type("user_question")))
    await viewer.until(lambda v: v.status is not None and v.status["waiting_for"] == "answer")
    question: dict[str, Any] = viewer.events_of_type("user_question")[0]["question"]
    return question


def answer(question: dict[str, Any], text: str, **changes: Any) -> dict[str, Any]:
    fields = {"call_id": question["call_id"], "args_hash": question["args_hash"], "text": text}
    return {**fields, **changes}


async def test_an_answer_typed_over_the_socket_is_what_the_agent_goes_on_with(
    ada: User,
) -> None:
    session = await booking_session(ada)
    viewer = await watch(application, session, ada)
    question = await ask(viewer)
    assert question["question"] == "Which city?"
    assert (await Session.objects.aget(pk=session.pk)).status == "waiting"

    # A decision is not an answer: the run refuses it and goes on waiting.
    await viewer.send(
        {
            "type": "approval",
            "call_id": question["call_id"],
            "args_hash": question["args_hash"],
            "decision": "approve",
        }
    )
    await viewer.until(lambda v: bool(v.errors))
    assert viewer.errors[-1]["code"] == "approval_not_pending"

    await viewer.send({"type": "answer", **answer(question, "Lisbon")})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    [answered] = viewer.events_of_type("user_answer")
    assert (answered["question"]["answer"], answered["question"]["answered_by"]) == (
        "Lisbon",
        "ada",
    )
    assert viewer.events_of_type("tool_response")[0]["parts"][0]["result"] == "Lisbon"
    assert viewer.events_of_type("agent_message")[-1]["parts"][0]["text"] == "Booked for Lisbon."
    assert [s["waiting_for"] for s in viewer.statuses][-1] is None
    assert viewer.events == await stored(session)
    # The wait for the answer is the person's time, not the tool's.
    timing = viewer.statuses[-1]["run"]["timing"]
    assert timing["human_ms"] > 0
    assert timing["human_ms"] > timing["tools_ms"]


async def test_the_api_answers_only_its_owners_waiting_question_once(ada: User, bob: User) -> None:
    session = await booking_session(ada)
    viewer = await watch(application, session, ada)
    question = await ask(viewer)
    url = f"/api/sessions/{session.pk}/answers/"

    async def post(user: User, body: dict[str, Any]) -> Any:
        return await sync_to_async(client_for(user).post)(url, body, format="json")

    assert (await post(bob, answer(question, "Oslo"))).status_code == 404
    empty = await post(ada, answer(question, ""))
    assert empty.status_code == 400 and empty.json()["errors"][0]["path"] == "text"
    stale = await post(ada, answer(question, "Oslo", args_hash="0" * 64))
    assert (stale.status_code, stale.json()["code"]) == (409, "question_not_pending")
    answered = await post(ada, answer(question, "Oslo"))
    assert answered.status_code == 204, answered.content
    await viewer.until_ended()
    assert viewer.events_of_type("agent_message")[-1]["parts"][0]["text"] == "Booked for Oslo."
    again = await post(ada, answer(question, "Rome"))
    assert (again.status_code, again.json()["code"]) == (409, "question_not_pending")


async def test_a_cancelled_run_closes_its_question_as_not_run(ada: User) -> None:
    session = await booking_session(ada)
    viewer = await watch(application, session, ada)
    await ask(viewer)
    await viewer.send({"type": "cancel"})
    await viewer.until_ended()
    assert viewer.run_status == "cancelled"
    [response] = viewer.events_of_type("tool_response")
    assert response["parts"][0]["is_error"]
    assert response["parts"][0]["result"].startswith("not_run")


async def test_the_demo_trip_planner_asks_waits_and_plans_with_the_answer() -> None:
    """The demo account's agent that shows asking the user, on its offline model."""
    await sync_to_async(call_command)("seed_demo", "--force", stdout=io.StringIO())
    await ModelConfig.objects.filter(name=DEMO_MODEL).aupdate(options={})  # no pauses here
    demo = await User.objects.aget(username="demo")
    session = await new_session(demo, "trip_planner")
    viewer = await watch(application, session, demo)
    question = await ask(viewer)
    assert question["question"] == "Where will you start from, and on which day?"
    # The sessions list says what it waits on no more than it knows: not an approval.
    listed = await sync_to_async(lambda: signed_in(demo).get("/sessions/").content.decode())()
    assert '<span class="badge waiting">waiting for a person</span>' in listed
    assert "waiting for approval" not in listed
    await viewer.send({"type": "answer", **answer(question, "Lyon on Friday")})
    await viewer.until_ended()
    assert viewer.run_status == "succeeded"
    planned = viewer.events_of_type("agent_message")[-1]["parts"][0]["text"]
    assert planned.startswith("A day trip from Lyon on Friday: the 9:12 train out")


async def test_the_inbox_lists_a_waiting_question_to_its_owner_until_it_is_answered(
    ada: User, bob: User
) -> None:
    """The approvals inbox (API, socket and page) lists questions waiting for an answer
    beside the calls waiting for a decision, which they are not: its count is of those."""
    inboxes = {}
    for user in (ada, bob):
        inboxes[user.username], connected = await open_socket(
            application, None, user, path="/ws/approvals/"
        )
        assert connected
        assert (await inboxes[user.username].receive_json_from(timeout=5))["questions"] == []
    session = await booking_session(ada)
    viewer = await watch(application, session, ada)
    question = await ask(viewer)

    pushed = await inboxes["ada"].receive_json_from(timeout=5)
    assert (pushed["count"], pushed["results"]) == (0, [])
    [listed] = pushed["questions"]
    assert (listed["question"], listed["call_id"], listed["agent"]) == (
        "Which city?",
        question["call_id"],
        "booker",
    )
    assert listed["session_url"] == f"/sessions/{session.pk}/"
    # It waits for its tool's time-out at most (the default, 15 minutes), then goes on.
    assert question["timeout_s"] == 900.0
    asked_at = datetime.fromisoformat(viewer.events_of_type("user_question")[0]["created_at"])
    assert datetime.fromisoformat(listed["expires_at"]) - asked_at == timedelta(seconds=900)
    api = (await sync_to_async(client_for(ada).get)("/api/approvals/")).json()
    assert [q["call_id"] for q in api["questions"]] == [question["call_id"]]
    page = await sync_to_async(lambda: signed_in(ada).get("/approvals/").content.decode())()
    assert 'data-testid="question-row"' in page and "Which city?" in page
    # The navigation's badge counts what waits for its user: the question, here.
    assert 'id="approvals-badge" data-count="1"' in page
    assert (await sync_to_async(client_for(bob).get)("/api/approvals/")).json()["questions"] == []
    assert await inboxes["bob"].receive_nothing(timeout=0.3)

    await viewer.send({"type": "answer", **answer(question, "Lisbon")})
    assert (await inboxes["ada"].receive_json_from(timeout=5))["questions"] == []
    await viewer.until_ended()
    for inbox in inboxes.values():
        await inbox.disconnect()


async def test_the_inbox_page_answers_a_question_in_place(ada: User, bob: User) -> None:
    """The inbox carries what an answer needs (the call and its question's hash), so a
    question is answered where it is listed, by its owner only, and the run goes on."""
    session = await booking_session(ada)
    viewer = await watch(application, session, ada)
    question = await ask(viewer)
    [listed] = (await sync_to_async(client_for(ada).get)("/api/approvals/")).json()["questions"]
    assert listed["args_hash"] == question["args_hash"]

    async def post(user: User, text: str, **changes: Any) -> str:
        form = {"session": str(session.pk), **answer(listed, text, **changes)}
        client = await sync_to_async(signed_in)(user)
        response = await sync_to_async(client.post)("/approvals/answer/", form, follow=True)
        assert response.status_code == 200, response.status_code
        return str(response.content.decode())

    intruder = await sync_to_async(signed_in)(bob)
    forbidden = await sync_to_async(intruder.post)(
        "/approvals/answer/", {"session": str(session.pk), **answer(listed, "Oslo")}
    )
    assert forbidden.status_code == 404
    assert '<li class="alert error">Type an answer first.' in await post(ada, "  ")
    too_long = await post(ada, "x" * (MAX_ANSWER_CHARS + 1))
    assert f"not sent: it has at most {MAX_ANSWER_CHARS:,} characters.</li>" in too_long
    assert "not sent: Value error, text must not contain NUL" in await post(ada, "Os\x00lo")
    stale = await post(ada, "Oslo", args_hash="0" * 64)  # not the question listed
    assert '<li class="alert error">the reply is for different arguments' in stale
    assert (await Session.objects.aget(pk=session.pk)).status == "waiting"
    page = await post(ada, "Oslo")
    assert "Answer sent; the agent goes on with it." in page
    await viewer.until_ended()
    answered = viewer.events_of_type("user_answer")[0]["question"]
    assert (answered["answer"], answered["answered_by"]) == ("Oslo", "ada")
    assert viewer.events_of_type("agent_message")[-1]["parts"][0]["text"] == "Booked for Oslo."
    assert 'data-testid="question-row"' not in await post(ada, "Rome")
