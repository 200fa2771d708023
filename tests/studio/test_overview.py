"""The overview dashboard: its figures per day, agent and model over known runs and
model events, only the user's own, and the page with its links down to the sessions."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import User
from django.test import Client

from studio.models import Event, IngestedTrace, ModelConfig, ModelDay, Run, RunStatus, Session
from studio.overview import DayRange, overview
from studio.overview.latency import percentile_cont
from studio.rollups import days
from studio.rollups.queries import MODEL_CALL
from tests.studio.conftest import make_agent, make_session, signed_in
from tests.studio.test_otlp_ingest import post, token_for
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of, start_of

pytestmark = pytest.mark.django_db

DAY1, DAY2 = date(2026, 11, 1), date(2026, 11, 2)
SPAN = DayRange(DAY1, date(2026, 11, 3))


def at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def add_run(
    session: Session,
    day: date,
    seconds: float,
    status: str = RunStatus.SUCCEEDED,
    cost: str | None = "0.5",
    tokens: tuple[int, int] = (100, 20),
) -> Run:
    run = Run.objects.create(session=session, message="hi", status=status)
    created = at(day)
    Run.objects.filter(pk=run.pk).update(
        created_at=created,
        started_at=created,
        ended_at=created + timedelta(seconds=seconds),
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        cost=Decimal(cost) if cost else None,
        cost_currency="USD" if cost else "",
        cost_complete=cost is not None,
    )
    return run


def add_call(run: Run, day: date, model: str, cost: str | None) -> None:
    """A model call of ``run`` as its end attributes it (to the run and its model)."""
    session = run.session
    session.last_seq += 1
    session.save(update_fields=["last_seq"])
    Event.objects.create(
        session=session, seq=session.last_seq, type="agent_message", author="agent",
        invocation_id="i", payload={}, schema_version=2, created_at=at(day),
        usage={"input_tokens": 100, "output_tokens": 20}, run=run, model=model,
        cost=Decimal(cost) if cost else None, cost_currency="USD" if cost else "",
    )  # fmt: skip


def end(run: Run) -> None:
    """What ``end_run`` adds up once it attributed the run's calls."""
    days.add_run(Run.objects.select_related("session").get(pk=run.pk))


@pytest.fixture
def history(ada: User, bob: User) -> dict[str, Session]:
    helper = make_agent(ada, "helper")
    ModelConfig.objects.create(owner=ada, name="big", provider="scripted", model="big-model-1")
    writer = make_agent(ada, "writer", model="big")
    first, second = make_session(ada, helper), make_session(ada, writer)
    runs = [add_run(first, DAY1, seconds) for seconds in (1, 2, 3)]
    add_run(first, DAY1, 10, RunStatus.FAILED, cost=None)
    interrupted = add_run(second, DAY2, 4, RunStatus.INTERRUPTED, cost="0.25", tokens=(50, 0))
    add_run(second, DAY2 + timedelta(days=5), 4)  # outside the range
    add_call(runs[0], DAY1, "scripted", "0.1")
    add_call(runs[1], DAY1, "scripted", "0.2")
    add_call(interrupted, DAY2, "big-model-1", None)
    theirs = make_session(bob, make_agent(bob, "helper"))
    their_run = add_run(theirs, DAY1, 100, RunStatus.FAILED)
    add_call(their_run, DAY1, "scripted", "9")
    for run in (*runs, interrupted, their_run):
        end(run)
    return {"first": first, "second": second, "theirs": theirs}


def test_percentile_cont_interpolates_like_postgresql() -> None:
    assert percentile_cont([1, 2, 3, 10], 0.5) == 2.5
    assert percentile_cont([1, 2, 3, 10], 0.95) == pytest.approx(8.95)
    assert percentile_cont([4], 0.95) == 4
    assert percentile_cont([], 0.5) is None


def test_figures_per_day_count_runs_errors_latency_tokens_and_cost(
    ada: User, history: dict[str, Session]
) -> None:
    figures = overview(ada, SPAN)
    one, two, three = figures.days
    assert (one.key, one.runs, one.errors) == (DAY1, 4, 1)
    assert (one.p50, one.p95) == (2.5, pytest.approx(8.95))
    assert (one.input_tokens, one.output_tokens) == (400, 80)
    assert one.cost == {"USD": Decimal("1.5")} and one.cost_incomplete == 1
    assert (two.runs, two.errors, two.p50, two.p95) == (1, 1, 4, 4)
    assert two.cost == {"USD": Decimal("0.25")} and two.cost_incomplete == 0
    assert (three.runs, three.p50, three.cost) == (0, None, {})
    total = figures.total
    assert (total.runs, total.errors, total.cost) == (5, 2, {"USD": Decimal("1.75")})


def test_figures_by_agent_and_by_model(ada: User, history: dict[str, Session]) -> None:
    figures = overview(ada, SPAN)
    agents = {row.label: row for row in figures.agents}
    assert set(agents) == {"helper", "writer"}
    assert (agents["helper"].runs, agents["helper"].errors, agents["helper"].p50) == (4, 1, 2.5)
    assert (agents["writer"].runs, agents["writer"].errors, agents["writer"].p95) == (1, 1, 4)
    models = {row.label: row for row in figures.models}
    assert set(models) == {"scripted", "big-model-1"}
    assert models["scripted"].calls == 2
    assert models["scripted"].cost == {"USD": Decimal("0.3")}
    assert (models["scripted"].input_tokens, models["scripted"].output_tokens) == (200, 40)
    assert (models["big-model-1"].cost, models["big-model-1"].cost_incomplete) == ({}, 1)


def test_a_user_sees_only_their_own_runs(bob: User, history: dict[str, Session]) -> None:
    figures = overview(bob, SPAN)
    assert (figures.total.runs, figures.total.errors) == (1, 1)
    assert figures.total.cost == {"USD": Decimal("0.5")}
    assert [(m.label, m.calls) for m in figures.models] == [("scripted", 1)]


def test_the_page_needs_a_login_and_shows_the_range(ada: User, history: dict[str, Session]) -> None:
    assert Client().get("/overview/").status_code == 302
    client = Client()
    client.force_login(ada)
    page = client.get("/overview/", {"start": "2026-11-01", "end": "2026-11-03"})
    assert page.status_code == 200
    assert page.context["span"] == SPAN
    assert page.context["total"]["row"].runs == 5
    assert b'id="overview-data"' in page.content
    assert b'value="2026-11-01"' in page.content and b'value="2026-11-03"' in page.content
    default_page = client.get("/overview/")
    default = default_page.context["span"]
    assert (default.last - default.first).days == 13
    # The pickers show the range the figures cover, defaults included.
    assert f'value="{default.first.isoformat()}"'.encode() in default_page.content


def test_days_with_no_runs_say_so_instead_of_drawing_empty_charts(
    ada: User, history: dict[str, Session]
) -> None:
    client = signed_in(ada)
    quiet = client.get("/overview/", {"start": "2026-10-01", "end": "2026-10-14"})
    assert quiet.status_code == 200
    body = quiet.content.decode()
    assert 'data-testid="overview-empty"' in body
    assert "No runs from Oct. 1, 2026 to Oct. 14, 2026" in body
    assert 'href="/playground/"' in body
    # No charts of zeros, no table of fourteen empty days, no script to draw them.
    assert 'id="overview-data"' not in body and "data-chart=" not in body
    assert "overview.js" not in body and "Per day" not in body
    # The pickers stay, to choose other days.
    assert 'value="2026-10-01"' in body and 'value="2026-10-14"' in body
    busy = client.get("/overview/", {"start": "2026-11-01", "end": "2026-11-03"}).content
    assert b"overview-empty" not in busy and b"data-chart=" in busy


def test_an_error_figure_links_to_the_sessions_with_a_failed_run(
    ada: User, history: dict[str, Session]
) -> None:
    client = Client()
    client.force_login(ada)
    page = client.get("/overview/", {"start": "2026-11-01", "end": "2026-11-03"})
    day_one = page.context["days"][0]["links"]
    listed = client.get(day_one["errors"])
    assert [s.pk for s, *_ in listed.context["rows"]] == [history["first"].pk]
    # The filter form keeps the overview's filters, set ones only, when it is used.
    form = listed.content.decode().split('role="search"', 1)[1].split("</form>", 1)[0]
    kept = re.findall(r'<input type="hidden" name="(ran_\w+)" value="([^"]*)">', form)
    assert kept == [("ran_from", "2026-11-01"), ("ran_to", "2026-11-01"), ("ran_errors", "on")]
    day_two = page.context["days"][1]["links"]
    listed = client.get(day_two["sessions"])
    assert [s.pk for s, *_ in listed.context["rows"]] == [history["second"].pk]
    nothing = client.get(page.context["days"][2]["links"]["sessions"])
    assert list(nothing.context["rows"]) == []


def test_a_model_figure_links_to_the_sessions_that_called_it(
    ada: User, history: dict[str, Session]
) -> None:
    client = Client()
    client.force_login(ada)
    page = client.get("/overview/", {"start": "2026-11-01", "end": "2026-11-03"})
    links = {entry["row"].label: entry["links"] for entry in page.context["models"]}
    listed = client.get(links["big-model-1"]["sessions"])
    assert [s.pk for s, *_ in listed.context["rows"]] == [history["second"].pk]
    assert b"calling big-model-1" in listed.content
    listed = client.get(links["scripted"]["sessions"])
    assert [s.pk for s, *_ in listed.context["rows"]] == [history["first"].pk]


def test_deleting_a_session_takes_its_calls_out_of_the_model_figures(
    ada: User, history: dict[str, Session]
) -> None:
    history["first"].delete()
    models = {row.label: row for row in overview(ada, SPAN).models}
    assert models["scripted"].calls == 0 and models["scripted"].cost == {}
    assert models["big-model-1"].calls == 1
    history["second"].agent_version.agent.delete()  # its sessions and runs go with it
    assert all(row.calls == 0 for row in overview(ada, SPAN).models)


def test_model_day_totals_equal_the_sums_of_the_calls_of_ended_runs(
    ada: User, bob: User, history: dict[str, Session]
) -> None:
    kept = {
        (row.owner_id, row.day, row.model, row.currency): (row.calls, row.unknown, row.cost)
        for row in ModelDay.objects.all()
    }
    calls = Event.objects.filter(MODEL_CALL, run__isnull=False)
    summed = {
        (g["session__owner_id"], g["day"], g["model"], g["cost_currency"]): (
            g["calls"], g["unknown"], g["cost"] or Decimal(0)
        )
        for g in days.grouped(calls, "session__owner_id")
    }  # fmt: skip
    assert kept == summed and len(kept) == 3


def test_token_counts_are_written_with_grouped_digits_as_every_page_writes_them(
    ada: User,
) -> None:
    session = make_session(ada, make_agent(ada, "talker"))
    end(add_run(session, DAY1, 2, tokens=(12_000, 345)))
    body = signed_in(ada).get("/overview/", {"start": "2026-11-01", "end": "2026-11-03"})
    text = re.sub(r"\s+", " ", body.content.decode())
    assert "<strong>12,345</strong> tokens" in text  # the summary line
    assert text.count('<td class="num">12,345</td>') == 2  # its day's row and its agent's


def test_an_ingested_traces_agent_has_its_own_row_linked_to_its_sessions(ada: User) -> None:
    """An agent built elsewhere (its traces sent over OTLP) is named, marked external,
    and its row's link lists its sessions only: not "(no agent)"."""
    spans = agent_trace(new_trace_id())
    # The trace's day, not today's: its times are fixed when the module loads, and the
    # suite may pass midnight (UTC) before this test runs.
    day = start_of(spans[0]).date()
    studio_run = add_run(make_session(ada, make_agent(ada, "talker")), day, 2)
    end(studio_run)
    assert post(request_of(*spans).SerializeToString(), token_for(ada))
    trace = IngestedTrace.objects.get(owner=ada)
    page = signed_in(ada).get("/overview/", {"start": day.isoformat(), "end": day.isoformat()})
    rows = {item["row"].label: item for item in page.context["agents"]}
    assert set(rows) == {"talker", "shopper (external)"}
    assert rows["shopper (external)"]["row"].runs == 1
    listed = signed_in(ada).get(rows["shopper (external)"]["links"]["sessions"])
    assert [s.pk for s in listed.context["page"].object_list] == [trace.session_id]
