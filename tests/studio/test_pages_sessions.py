"""The session pages' server side: the timeline carries its newest events as data, and
the session list's rows share one delete form."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents_core import events as core_events
from studio.models import AgentVersion, Event, Run, Session
from studio.session_service import append_event_sync
from studio.web.format import duration, tokens
from studio.web.sessions import TIMELINE_PAGE_SIZE
from tests.studio.conftest import make_session, signed_in

pytestmark = pytest.mark.django_db

PAYLOAD = "</script><script>alert(1)</script>"


def add_event(session: Session, text: str) -> core_events.Event:
    event = core_events.Event(
        type=core_events.EventType.AGENT_MESSAGE,
        invocation_id="inv",
        session_id=session.key,
        author="helper",
        parts=[core_events.TextPart(text=text)],
    )
    return append_event_sync(session.key, event)


def timeline_data(html: str) -> dict[str, Any]:
    found = re.search(r'<script id="timeline-data" type="application/json">(.*?)</script>', html)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def test_the_timeline_comes_with_its_newest_page_of_events_as_escaped_data(ada: User) -> None:
    session = make_session(ada)
    total = TIMELINE_PAGE_SIZE + 10
    for n in range(total - 1):
        add_event(session, f"message {n}")
    add_event(session, PAYLOAD)

    response = signed_in(ada).get(reverse("session-timeline", args=[session.pk]))

    assert response.status_code == 200
    html = response.content.decode()
    assert PAYLOAD not in html  # the data cannot close its script element
    data = timeline_data(html)
    events = data["events"]
    assert [e["seq"] for e in events] == list(range(11, total + 1))
    stored = Event.objects.filter(session=session, seq__gt=10).order_by("seq")
    assert events == [row.payload for row in stored]
    assert events[-1]["parts"][0]["text"] == PAYLOAD


def test_the_timeline_carries_no_event_past_the_last_seq_it_read(ada: User) -> None:
    session = make_session(ada)
    for n in range(3):
        add_event(session, f"message {n}")
    # A stored row the session's counter does not count yet (as while another writer's
    # transaction commits): the page's socket is the one to deliver it.
    Session.objects.filter(pk=session.pk).update(last_seq=2)

    response = signed_in(ada).get(reverse("session-timeline", args=[session.pk]))

    data = timeline_data(response.content.decode())
    assert [e["seq"] for e in data["events"]] == [1, 2]


def test_the_timeline_reads_its_runs_and_its_agents_versions_once(ada: User) -> None:
    """The fork form, the replay controls and "Add this turn to a dataset" show what the
    page read for its runs list and its version picker, not a read each of their own."""
    session = make_session(ada)
    assert session.agent_version is not None
    AgentVersion.objects.create(
        agent=session.agent_version.agent, number=2, spec=session.agent_version.spec
    )
    now = timezone.now()
    ended = [
        Run.objects.create(session=session, message=f"turn {n}", status="succeeded", ended_at=now)
        for n in range(2)
    ]
    Run.objects.create(session=session, message="still going", status="running")

    with CaptureQueriesContext(connection) as queries:
        response = signed_in(ada).get(reverse("session-timeline", args=[session.pk]))

    assert response.status_code == 200
    html = response.content.decode()
    reads = [q["sql"] for q in queries.captured_queries]
    assert len([sql for sql in reads if '"studio_run"."message"' in sql]) == 1
    assert len([sql for sql in reads if 'FROM "studio_agentversion"' in sql]) == 1
    data = timeline_data(html)
    assert [(v["number"], v["current"]) for v in data["versions"]] == [(2, False), (1, True)]
    assert data["fork"] == {"resumable": False}
    offered = re.findall(r'<option value="([0-9a-f-]{36})"', html)
    assert {str(run.pk) for run in ended} <= set(offered)  # the ended runs, as turns
    assert len([pk for pk in offered if pk in {str(r.pk) for r in ended}]) == 2
    replays = html[html.index('id="replay-controls"') :]
    assert ">v2<" in replays and "v1 (recorded)" in replays


def replay_controls_tag(ada: User, session: Session) -> str:
    html = signed_in(ada).get(reverse("session-timeline", args=[session.pk])).content.decode()
    return re.search(r'<span class="replay-controls" id="replay-controls"[^>]*>', html)[0]  # type: ignore[index]


def test_the_replay_controls_are_there_from_the_first_paint_when_the_latest_run_ended(
    ada: User,
) -> None:
    """Shown only once the page's socket said the run had ended, the controls pushed the
    buttons before them aside under the pointer (a click meant for Waterfall missed)."""
    session = make_session(ada)
    assert "hidden" in replay_controls_tag(ada, session)  # no run yet: nothing to replay
    first = Run.objects.create(
        session=session, message="hi", status="succeeded", ended_at=timezone.now()
    )
    assert "hidden" not in replay_controls_tag(ada, session)
    resumed = Run.objects.create(
        session=session, message="", status="succeeded", ended_at=timezone.now(),
        resumed_from=first,
    )  # fmt: skip
    assert "hidden" in replay_controls_tag(ada, session)  # as timeline.js has it
    resumed.delete()
    Run.objects.create(session=session, message="again", status="running")
    assert "hidden" in replay_controls_tag(ada, session)


def test_another_users_timeline_is_not_found(ada: User, bob: User) -> None:
    session = make_session(ada)
    add_event(session, "private")

    response = signed_in(bob).get(reverse("session-timeline", args=[session.pk]))

    assert response.status_code == 404
    assert b"private" not in response.content


def test_the_status_filter_names_every_status_alike(ada: User) -> None:
    """Its options (and the admin's filter) are labels: "Waiting for a person" among
    "Idle" and "Paused", not the one lower-case name; the badges lower-case them all."""
    Session.objects.filter(pk=make_session(ada, title="asks").pk).update(status="waiting")
    html = signed_in(ada).get(reverse("sessions")).content.decode()
    start = html.index('name="status"')
    select = html[start : html.index("</select>", start)]
    options = re.findall(r'<option value="(\w+)"[^>]*>([^<]+)</option>', select)
    assert ("waiting", "Waiting for a person") in options
    assert all(label[0].isupper() for _, label in options), options
    assert '<span class="badge waiting">waiting for a person</span>' in html


def test_the_session_list_rows_share_one_delete_form(ada: User) -> None:
    sessions = [make_session(ada, title=f"s{n}") for n in range(3)]
    client = signed_in(ada)

    html = client.get(reverse("sessions")).content.decode()

    table = html[html.index('data-testid="session-table"') : html.index("</table>")]
    assert "csrfmiddlewaretoken" not in table  # one token, in the shared form
    assert re.search(r'<form id="delete-session"[^>]*>\s*<input type="hidden" name="csrf', html)
    actions = re.findall(r'form="delete-session" formaction="([^"]+)"', html)
    assert sorted(actions) == sorted(reverse("session-delete", args=[s.pk]) for s in sessions)
    for session in sessions:  # each row links to its own pages
        assert f'<a class="title" href="{reverse("session-timeline", args=[session.pk])}"' in html
        assert f'href="{reverse("session-waterfall", args=[session.pk])}">Waterfall' in html
    response = client.post(actions[0], {"next": reverse("sessions")})
    assert response.status_code == 302
    assert Session.objects.filter(owner=ada).count() == 2


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (None, ""),
        (0, "0 ms"),
        (0.2, "<1 ms"),
        (0.5, "1 ms"),
        (2.5, "3 ms"),  # a tie rounds up, as Math.round does
        (320.4, "320 ms"),
        (999.6, "1.0 s"),  # the unit follows the rounded figure: not "1000 ms"
        (1250, "1.3 s"),  # and as toFixed does
        (timedelta(milliseconds=1500), "1.5 s"),
        (59_960, "1:00 min"),  # not "60.0 s"
        (timedelta(minutes=2, seconds=5), "2:05 min"),
        (119_600, "2:00 min"),
        (3_599_700, "1:00 h"),  # not "60:00 min"
        (timedelta(hours=1, minutes=2, seconds=9), "1:02 h"),
    ],
)
def test_durations_are_written_as_the_pages_scripts_write_them(
    value: timedelta | float | None, written: str
) -> None:
    assert duration(value) == written


def test_tokens_are_written_in_one_vocabulary() -> None:
    assert tokens({"input": 1204, "output": 88}) == "1,204 in · 88 out"
    assert (
        tokens({"input": 1204, "cached": 1000, "output": 88}) == "1,204 in (1,000 cached) · 88 out"
    )
    assert tokens({"input": 1204, "cached": 0, "output": 88}) == "1,204 in · 88 out"
    assert tokens({"input": 0, "output": 0}) == ""
    assert tokens(None) == ""
