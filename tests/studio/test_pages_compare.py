"""The compare page's server side: two stored runs side by side with what changed, as
text; only the owner's runs (404 otherwise); the session list's ticked sessions and the
session page's "Compare with…" lead to it."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from agents_core import events as core_events
from studio.models import Run, RunStatus, Session
from studio.session_service import append_event_sync
from tests.studio.conftest import make_session, signed_in
from tests.studio.diff_events import Script

pytestmark = pytest.mark.django_db

MARKUP = "<b>bold</b> & <script>alert(1)</script>"


def stored_run(session: Session, script: Script, *, minutes_ago: int = 0) -> Run:
    """``script``'s events stored as a finished run of ``session``."""
    session.refresh_from_db()
    invocation = core_events.new_id()
    when = timezone.now() - timedelta(minutes=minutes_ago)
    run = Run.objects.create(
        session=session,
        message=script.events[0].text,
        status=RunStatus.SUCCEEDED,
        start_seq=session.last_seq,
        invocation_id=invocation,
        ended_at=when,
        input_tokens=100,
        output_tokens=20,
    )
    Run.objects.filter(pk=run.pk).update(created_at=when)
    for event in script.events:
        fresh = {"seq": None, "invocation_id": invocation, "session_id": session.key}
        append_event_sync(session.key, event.model_copy(update=fresh))
    run.refresh_from_db()
    return run


def weather(city: str, result: str, answer: str) -> Script:
    script = Script().user(f"Weather in {city}?").start()
    return script.call("weather", {"city": city}, result).say(answer).end()


def statuses(html: str) -> list[str]:
    return re.findall(r'data-status="(\w+)"', html)


def test_two_runs_show_side_by_side_with_what_changed_as_text(ada: User) -> None:
    session = make_session(ada, title="Weather")
    a = stored_run(session, weather("Oslo", '{"temp": 12}', "It is 12 degrees."), minutes_ago=5)
    b = stored_run(session, weather("Oslo", '{"temp": 14}', f"It is 14 degrees. {MARKUP}"))
    response = signed_in(ada).get(f"/compare/?a={a.pk}&b={b.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    assert statuses(html) == ["same", "same", "changed", "changed"]
    assert "result.temp" in html and "parts[0].text" in html
    assert "<del>12</del><ins>14</ins>" in html  # the answer, word by word
    # What the model said is text: escaped, never markup.
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<b>bold</b>" not in html and "<script>alert(1)" not in html
    assert f'href="/compare/?a={b.pk}&amp;b={a.pk}"' in html  # swap sides
    assert f"/sessions/{session.pk}/?seq=" in html  # each step links to the timeline


def test_a_run_compared_with_itself_says_so(ada: User) -> None:
    run = stored_run(make_session(ada), weather("Oslo", "sunny", "Sunny."))
    html = signed_in(ada).get(f"/compare/?a={run.pk}&b={run.pk}").content.decode()
    assert 'data-testid="compare-summary"' in html and "identical" in html
    assert set(statuses(html)) == {"same"}


def test_another_users_run_is_not_found(ada: User, bob: User) -> None:
    mine = stored_run(make_session(ada), weather("Oslo", "sunny", "Sunny."))
    theirs = stored_run(make_session(bob), weather("Oslo", "sunny", "Sunny."))
    client = signed_in(ada)
    for query in (f"a={mine.pk}&b={theirs.pk}", f"a={theirs.pk}&b={mine.pk}", f"a={theirs.pk}"):
        assert client.get(f"/compare/?{query}").status_code == 404
    assert client.get("/compare/?a=not-a-run").status_code == 404
    assert signed_in(bob).get(f"/compare/?a={mine.pk}&b={mine.pk}").status_code == 404
    anonymous = signed_in(ada)
    anonymous.logout()
    assert anonymous.get(f"/compare/?a={mine.pk}&b={mine.pk}").status_code == 302


def test_the_picker_offers_only_the_users_own_runs(ada: User, bob: User) -> None:
    mine = stored_run(make_session(ada, title=MARKUP), weather("Oslo", "sunny", "Sunny."))
    theirs = stored_run(make_session(bob), weather("Oslo", "sunny", "Sunny."))
    html = signed_in(ada).get(f"/compare/?a={mine.pk}").content.decode()
    assert f'<option value="{mine.pk}" selected>' in html
    assert str(theirs.pk) not in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "Compare with…" in html


def test_ticked_sessions_compare_their_latest_runs_older_first(ada: User) -> None:
    first, second = make_session(ada), make_session(ada)
    stored_run(first, weather("Oslo", "1", "x"), minutes_ago=30)
    older = stored_run(first, weather("Oslo", "2", "y"), minutes_ago=20)
    newer = stored_run(second, weather("Oslo", "3", "z"), minutes_ago=10)
    client = signed_in(ada)
    response = client.get(f"/compare/?session={second.pk}&session={first.pk}")
    assert response.status_code == 302
    assert response["Location"] == f"/compare/?a={older.pk}&b={newer.pk}"
    # One session ticked: its last two runs.
    response = client.get(f"/compare/?session={first.pk}")
    assert response["Location"].endswith(f"b={older.pk}")
    # A single run, or another user's session: nothing to compare, said on the picker.
    response = client.get(f"/compare/?session={second.pk}", follow=True)
    assert response.redirect_chain == [("/compare/", 302)]
    assert "Tick two sessions" in response.content.decode()


def test_the_session_list_and_page_lead_to_compare(ada: User) -> None:
    session = make_session(ada, title="Weather")
    run = stored_run(session, weather("Oslo", "1", "x"))
    client = signed_in(ada)
    listing = client.get("/sessions/").content.decode()
    assert 'id="compare-sessions"' in listing and 'action="/compare/"' in listing
    assert f'name="session" value="{session.pk}" form="compare-sessions"' in listing
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'href="/compare/?a={run.pk}" data-testid="compare-with"' in page


def test_long_identical_stretches_fold_up_beside_the_differences(ada: User) -> None:
    session = make_session(ada)
    a, b = Script().user("count"), Script().user("count")
    for n in range(12):
        a.say(f"step {n}")
        b.say(f"step {n}")
    a.say("done: 12")
    b.say("done: 13")
    run_a, run_b = stored_run(session, a, minutes_ago=5), stored_run(session, b)
    html = signed_in(ada).get(f"/compare/?a={run_a.pk}&b={run_b.pk}").content.decode()
    # 13 identical steps before the change: 3 shown beside it, the 10 before folded.
    assert "<summary>10 identical steps</summary>" in html
    assert statuses(html) == ["same"] * 13 + ["changed"]
    folded = html.index('class="cmp-fold"')
    assert html.index("step 9") > folded and html.index("done: 13") > html.index("step 11")
