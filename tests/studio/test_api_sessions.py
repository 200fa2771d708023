from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from agents_core import events as core_events
from studio import services
from studio.models import Run, RunStatus, Session
from studio.runs import records
from studio.runs.records import Ending
from studio.session_service import append_event_sync
from tests.studio.conftest import make_agent, make_session, results

pytestmark = pytest.mark.django_db


def add_event(session: Session, text: str, **fields: object) -> core_events.Event:
    event = core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="inv",
        session_id=session.key,
        author="helper",
        parts=[core_events.TextPart(text=text)],
        **fields,
    )
    return append_event_sync(session.key, event)


def test_creating_a_session_pins_the_agents_current_version(api: APIClient, ada: User) -> None:
    agent = make_agent(ada)
    response = api.post("/api/sessions/", {"agent": str(agent.pk), "title": "first"})
    assert response.status_code == 201
    body = response.json()
    assert (body["agent"], body["agent_name"], body["agent_version"]) == (
        str(agent.pk),
        "helper",
        1,
    )
    assert (body["status"], body["last_seq"], body["title"]) == ("idle", 0, "first")
    services.save_agent_spec(agent, {"name": "helper", "model": "scripted", "instruction": "v2"})
    assert api.get(f"/api/sessions/{body['id']}/").json()["agent_version"] == 1


def test_a_session_for_an_unknown_agent_is_rejected_with_the_field_path(api: APIClient) -> None:
    response = api.post("/api/sessions/", {"agent": "00000000-0000-0000-0000-000000000000"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "agent"


def test_sessions_list_newest_first_with_cursor_pagination(api: APIClient, ada: User) -> None:
    agent = make_agent(ada)
    made = [make_session(ada, agent, title=f"s{i}") for i in range(3)]
    Session.objects.filter(pk=made[0].pk).update(created_at=timezone.now() - timedelta(days=1))
    first = api.get("/api/sessions/?page_size=2").json()
    titles = [s["title"] for s in first["results"]]
    assert titles[0] in {"s1", "s2"}
    assert "cursor=" in (first["next"] or "") or len(first["results"]) == 3
    everything = []
    url: str | None = "/api/sessions/"
    while url:
        page = api.get(url).json()
        everything += [s["title"] for s in page["results"]]
        url = page["next"]
    assert everything[-1] == "s0"
    assert sorted(everything) == ["s0", "s1", "s2"]


def test_sessions_filter_by_agent_status_and_date(api: APIClient, ada: User) -> None:
    one, two = make_agent(ada, "one"), make_agent(ada, "two")
    old = make_session(ada, one, title="old")
    Session.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=10))
    busy = make_session(ada, two, title="busy")
    services.start_run(busy, "hi")

    def titles(query: str) -> list[str]:
        return sorted(s["title"] for s in results(api.get(f"/api/sessions/?{query}").json()))

    assert titles(f"agent={one.pk}") == ["old"]
    assert titles("status=queued") == ["busy"]
    since = (timezone.now() - timedelta(days=1)).date().isoformat()
    assert titles(f"created_from={since}") == ["busy"]
    assert titles(f"created_to={since}") == ["old"]
    assert api.get("/api/sessions/?status=bogus").status_code == 400


def test_sessions_search_titles_and_message_text(api: APIClient, ada: User) -> None:
    agent = make_agent(ada)
    titled = make_session(ada, agent, title="Trip to Lisbon")
    talked = make_session(ada, agent, title="untitled")
    add_event(talked, "We talked about lisbon trams")
    add_event(talked, "and lisbon again")
    make_session(ada, agent, title="other")
    found = results(api.get("/api/sessions/?search=lisbon").json())
    assert sorted(s["id"] for s in found) == sorted([str(titled.pk), str(talked.pk)])


def test_a_session_title_can_be_edited_but_not_its_agent_or_state(
    api: APIClient, ada: User
) -> None:
    session = make_session(ada)
    response = api.patch(f"/api/sessions/{session.pk}/", {"title": "renamed", "state": {"x": 1}})
    assert response.status_code == 200
    session.refresh_from_db()
    assert (session.title, session.state) == ("renamed", {})
    assert api.put(f"/api/sessions/{session.pk}/", {"title": "x"}).status_code == 405


def test_deleting_a_session_cancels_its_active_run_and_removes_its_events(
    api: APIClient, ada: User
) -> None:
    session = make_session(ada)
    add_event(session, "hello")
    run = services.start_run(session, "hi")
    assert api.delete(f"/api/sessions/{session.pk}/").status_code == 204
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not Run.objects.filter(pk=run.pk).exists()


def test_events_come_in_seq_order_as_stored_wire_json(api: APIClient, ada: User) -> None:
    session = make_session(ada)
    stored = [add_event(session, f"m{i}") for i in range(3)]
    body = api.get(f"/api/sessions/{session.pk}/events/").json()
    assert body["results"] == [event.to_wire() for event in stored]
    assert (body["last_seq"], body["next"]) == (3, None)


def test_events_after_a_seq_page_forward_with_a_seq_cursor(api: APIClient, ada: User) -> None:
    session = make_session(ada)
    for i in range(5):
        add_event(session, f"m{i}")
    url = f"/api/sessions/{session.pk}/events/"
    page = api.get(f"{url}?after=1&limit=2").json()
    assert [e["seq"] for e in page["results"]] == [2, 3]
    assert page["last_seq"] == 3
    assert "after=3" in page["next"]
    rest = api.get(page["next"]).json()
    assert [e["seq"] for e in rest["results"]] == [4, 5]
    done = api.get(f"{url}?after=5").json()
    assert (done["results"], done["last_seq"], done["next"]) == ([], 5, None)


@pytest.mark.parametrize("query", ["after=-1", "after=x", "limit=ten"])
def test_a_malformed_events_cursor_is_a_coded_400(api: APIClient, ada: User, query: str) -> None:
    session = make_session(ada)
    response = api.get(f"/api/sessions/{session.pk}/events/?{query}")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"


def test_posting_a_message_answers_202_with_a_queued_run(api: APIClient, ada: User) -> None:
    session = make_session(ada)
    response = api.post(f"/api/sessions/{session.pk}/messages/", {"text": "what is 2 + 2?"})
    assert response.status_code == 202
    run = response.json()
    assert (run["status"], run["message"], run["session"]) == (
        "queued",
        "what is 2 + 2?",
        str(session.pk),
    )
    session.refresh_from_db()
    assert (session.status, session.title) == ("queued", "what is 2 + 2?")


def test_a_second_message_while_a_run_is_active_is_a_conflict(api: APIClient, ada: User) -> None:
    session = make_session(ada)
    url = f"/api/sessions/{session.pk}/messages/"
    api.post(url, {"text": "one"})
    response = api.post(url, {"text": "two"})
    assert response.status_code == 409
    assert response.json()["code"] == "run_in_progress"


def test_an_empty_message_is_rejected(api: APIClient, ada: User) -> None:
    session = make_session(ada)
    response = api.post(f"/api/sessions/{session.pk}/messages/", {"text": ""})
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "text"


def test_a_session_exports_its_events_runs_and_agent_version(api: APIClient, ada: User) -> None:
    session = make_session(ada)
    stored = add_event(session, "hello", actions=core_events.EventActions(state_delta={"k": 1}))
    run = services.start_run(session, "hi")
    response = api.get(f"/api/sessions/{session.pk}/export/")
    assert response.status_code == 200
    assert "attachment" in response["Content-Disposition"]
    document = response.json()
    assert document["format"] == "studio.session"
    stored_first, users_message = document["events"]
    assert stored_first == stored.to_wire()
    assert (users_message["type"], users_message["parts"][0]["text"]) == ("user_message", "hi")
    assert document["session"]["state"] == {"k": 1}
    assert document["agent"]["version"]["number"] == 1
    assert document["agent"]["version"]["spec"]["name"] == "helper"
    assert document["runs"] == [api.get(f"/api/runs/{run.pk}/").json()]


def test_run_detail_and_list_filtered_by_session(api: APIClient, ada: User) -> None:
    first, second = make_session(ada), make_session(ada, title="b")
    run = services.start_run(first, "hi")
    services.start_run(second, "hello")
    assert api.get(f"/api/runs/{run.pk}/").json()["message"] == "hi"
    listed = results(api.get(f"/api/runs/?session={first.pk}").json())
    assert [r["id"] for r in listed] == [str(run.pk)]
    assert len(results(api.get("/api/runs/?status=queued").json())) == 2


def test_cancelling_a_queued_run_records_it_and_frees_the_session(
    api: APIClient, ada: User
) -> None:
    session = make_session(ada)
    run = services.start_run(session, "hi")
    response = api.post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["error_code"]) == ("cancelled", "cancelled")
    assert body["ended_at"] is not None
    session.refresh_from_db()
    assert session.status == "cancelled"
    assert api.post(f"/api/sessions/{session.pk}/messages/", {"text": "again"}).status_code == 202


def test_cancelling_a_finished_run_is_a_conflict(api: APIClient, ada: User) -> None:
    run = services.start_run(make_session(ada), "hi")
    records.end_run(run.pk, Ending(RunStatus.SUCCEEDED))
    response = api.post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 409
    assert response.json()["code"] == "run_finished"


def test_cancelling_tells_the_executor_after_commit(
    api: APIClient, ada: User, django_capture_on_commit_callbacks: Any, recording_executor: Any
) -> None:
    run = services.start_run(make_session(ada), "hi")
    with django_capture_on_commit_callbacks() as callbacks:
        api.post(f"/api/runs/{run.pk}/cancel/")
        assert recording_executor.cancelled == []
    for callback in callbacks:
        callback()
    assert recording_executor.cancelled == [run.pk]
