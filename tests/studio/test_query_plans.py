"""The hot reads of a big history use an index: every query they send that touches the
events table is EXPLAINed (``EXPLAIN QUERY PLAN`` on SQLite, ``EXPLAIN`` on PostgreSQL)
and none reads the whole table. The queries are the ones the real views send, captured
while they answer, so a change to a view is checked as it is."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from studio.live.reads import stored_events
from studio.management.history import Plan, generate
from studio.models import Event, Run, RunSpans, Session
from tests.studio.conftest import client_for

pytestmark = pytest.mark.django_db

EVENTS = Event._meta.db_table
SESSIONS = Session._meta.db_table
PLAN = Plan(users=2, sessions=12, events=1_500, big_sessions=1, big_events=600, seed=3)


@pytest.fixture
def big_run() -> Run:
    generate(PLAN, log=lambda _: None)  # analyses what it loaded, on PostgreSQL
    run = Run.objects.select_related("session__owner").filter(session__title__endswith="(#0)")
    return run.get()


def plans_of(read: Callable[[], Any], table: str) -> list[tuple[str, list[str]]]:
    """Each query ``read`` sends that names ``table``, with its plan's lines: EXPLAINed
    as it was sent, its parameters bound. (With the values written in, SQLite plans
    another query: an index whose condition names a literal serves it, and not the
    bound value the view sends.)"""
    sent: list[tuple[str, Any]] = []

    def capture(execute: Callable[..., Any], sql: str, params: Any, *rest: Any) -> Any:
        sent.append((sql, params))
        return execute(sql, params, *rest)

    with connection.execute_wrapper(capture):
        read()
    found = [(sql, params) for sql, params in sent if f'"{table}"' in sql]
    assert found, f"{read} sent no query on {table}"
    return [(sql, explain(sql, params)) for sql, params in found]


def explain(sql: str, params: Any = None) -> list[str]:
    prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    with connection.cursor() as cursor:
        cursor.execute(prefix + sql, params)
        rows = cursor.fetchall()
    return [str(row[-1]) for row in rows]


def assert_indexed(read: Callable[[], Any], table: str) -> None:
    """No query of ``read`` on ``table`` scans it whole, and each reads it through an
    index."""
    for sql, plan in plans_of(read, table):
        text = "\n".join(plan)
        if connection.vendor == "sqlite":
            aliases = {table, *re.findall(rf'"{table}" (\w+)', sql)}
            scans = [line for line in plan if re.match(rf"SCAN ({'|'.join(aliases)})\b", line)]
            assert not scans, f"full scan of {table}:\n{text}\n{sql}"
            assert re.search(r"USING (COVERING |INTEGER PRIMARY KEY|PRIMARY KEY|INDEX)", text)
        else:
            assert not re.search(rf"Seq Scan on {table}\b", text), f"scans {table}:\n{text}"
            assert re.search(r"Index (Only )?Scan", text), f"no index of {table}:\n{text}"


def test_a_generated_history_leaves_postgresql_the_statistics_of_what_it_loaded() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite is left unanalysed, as a deployment has it")
    generate(PLAN, log=lambda _: None)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, reltuples FROM pg_class WHERE relname IN (%s, %s, %s)",
            [EVENTS, SESSIONS, Run._meta.db_table],
        )
        estimated = dict(cursor.fetchall())
    assert estimated == {
        EVENTS: Event.objects.count(),
        SESSIONS: Session.objects.count(),
        Run._meta.db_table: Run.objects.count(),
    }


def owner_client(run: Run) -> Client:
    client = Client()
    client.force_login(run.session.owner)
    return client


def test_the_timeline_reads_its_newest_events_through_the_seq_index(big_run: Run) -> None:
    page = reverse("session-timeline", args=[big_run.session.pk])
    assert_indexed(lambda: owner_client(big_run).get(page), EVENTS)


def test_the_events_api_pages_after_a_seq_through_the_seq_index(big_run: Run) -> None:
    url = f"/api/sessions/{big_run.session.pk}/events/?after=300&limit=100"
    assert_indexed(lambda: client_for(big_run.session.owner).get(url), EVENTS)


def test_the_live_replay_reads_after_a_seq_through_the_seq_index(big_run: Run) -> None:
    assert_indexed(lambda: stored_events(big_run.session.pk, 300, None), EVENTS)


def test_the_spans_of_a_run_read_its_invocation_through_an_index(big_run: Run) -> None:
    RunSpans.objects.all().delete()  # derived from the events, not read back as kept
    url = f"/api/runs/{big_run.pk}/spans/"
    assert_indexed(lambda: client_for(big_run.session.owner).get(url), EVENTS)


def test_the_session_list_filtered_by_status_reads_the_owners_sessions_by_index(
    big_run: Run,
) -> None:
    if connection.vendor == "postgresql":
        pytest.skip("PostgreSQL plans a dozen sessions as one page read, whatever the index")
    url = reverse("sessions") + "?status=succeeded"
    assert_indexed(lambda: owner_client(big_run).get(url), SESSIONS)


def test_the_session_search_reads_events_of_each_session_by_index(big_run: Run) -> None:
    # A term few events hold, as a search usually is: on PostgreSQL the trigram index of
    # UPPER(text) finds them (a word in most events is read faster by a scan, and the
    # planner rightly scans for it).
    url = reverse("sessions") + "?q=overloaded"
    assert_indexed(lambda: owner_client(big_run).get(url), EVENTS)


@pytest.mark.parametrize("group_by", ["agent", "model", "day", "tool", "session", "run"])
def test_the_cost_roll_ups_read_the_owners_model_calls_by_index(
    big_run: Run, group_by: str
) -> None:
    # The partial index's condition is the roll-ups' exactly: a looser one (it once
    # named agent_message alone) is not implied by theirs, and PostgreSQL scanned every
    # event of every user for one user's costs (600 ms at 577,000 events).
    url = f"/api/costs/?group_by={group_by}"
    assert_indexed(lambda: client_for(big_run.session.owner).get(url), EVENTS)


def test_staff_cost_per_user_reads_only_the_calls_no_ended_run_claimed(big_run: Run) -> None:
    # Every user's costs come from their day totals; of the events, only the calls of
    # runs still going are read, through their own small partial index (adding up every
    # call took ~1 s at 577,000 events).
    staff = big_run.session.owner
    staff.is_staff = True
    staff.save(update_fields=["is_staff"])
    read = lambda: client_for(staff).get("/api/costs/?group_by=user")  # noqa: E731
    for sql, plan in plans_of(read, EVENTS):  # SQLite too: the run index holds no NULLs
        assert "event_unattributed_call" in "\n".join(plan), f"{sql}\n{plan}"
