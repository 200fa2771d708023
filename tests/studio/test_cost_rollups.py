"""Where the money went: each model call attributed, when its run ends, to its run, its
model and the tool call that led to it (an agent called as a tool); and
``GET /api/costs/`` adding calls up per run, session, agent, agent version, tool,
model, user or day: owner-scoped, ``user`` for staff only, over a range of days."""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio import services
from studio.models import Event, ModelConfig, Run, Session
from studio.rollups import days as model_days
from studio.rollups.queries import GroupBy, model_calls, roll_up
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, error_paths, make_session
from tests.support.live import script_model, scripted_agent

DAY = datetime(2026, 11, 30, 12, tzinfo=UTC)
_seqs = itertools.count(1)


def model_call(
    session: Session,
    *,
    cost: str | None = "0.0100000000",
    currency: str = "USD",
    author: str = "helper",
    tool: str = "",
    model: str = "m",
    run: Run | None = None,
    at: datetime = DAY,
    tokens: tuple[int, int] = (10, 5),
) -> Event:
    """A stored model call (only the columns the roll-ups read)."""
    usage = {"input_tokens": tokens[0], "output_tokens": tokens[1]}
    return Event.objects.create(
        session=session,
        seq=next(_seqs),
        type="agent_message",
        author=author,
        invocation_id="inv",
        payload={},
        schema_version=2,
        usage=usage,
        cost=None if cost is None else Decimal(cost),
        cost_currency="" if cost is None else currency,
        tool=tool,
        model=model,
        run=run,
        created_at=at,
    )


def costs(user: User, **params: str) -> Any:
    return client_for(user).get("/api/costs/", params)


# Attribution at the end of a run

PLANNER = [
    {"text": "asking", "tool_calls": [{"name": "researcher", "args": {"request": "6 * 7?"}}]},
    {"text": "the researcher says 42"},
]
RESEARCHER = [
    {"text": "checking", "tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
    {"text": "42"},
]


@pytest.mark.django_db(transaction=True)
async def test_a_sub_agents_calls_are_attributed_to_the_tool_call_that_ran_it(ada: User) -> None:
    run = await _planner_run(ada)
    finished = await execute_run(run)
    assert finished.status == "succeeded", finished.error_message
    rows = Event.objects.filter(
        session_id=run.session_id, type="agent_message", usage__isnull=False
    )
    calls = [(r.author, r.tool, r.model, r.run_id) async for r in rows.order_by("seq")]
    assert calls == [
        ("planner", "", "planner_model", run.pk),
        ("researcher", "researcher", "researcher_model", run.pk),
        ("researcher", "researcher", "researcher_model", run.pk),
        ("planner", "", "planner_model", run.pk),
    ]
    by_tool = {r["key"]: r for r in (await _costs(ada, group_by="tool"))["rows"]}
    assert by_tool.keys() == {None, "researcher"}
    assert by_tool["researcher"]["calls"] == 2
    total = sum(Decimal(r["cost"]) for r in by_tool.values())
    assert total == finished.cost


async def _costs(user: User, **params: str) -> Any:
    from asgiref.sync import sync_to_async

    response = await sync_to_async(costs)(user, **params)
    assert response.status_code == 200, response.content
    return response.json()


async def _planner_run(owner: User) -> Run:
    from asgiref.sync import sync_to_async

    @sync_to_async
    def start() -> Run:
        script_model(owner, "researcher_model", RESEARCHER)
        researcher = {
            "name": "researcher",
            "model": "researcher_model",
            "instruction": "Follow the script.",
            "tools": [{"name": "calculator"}],
        }
        agent = scripted_agent(owner, "planner", PLANNER, agent_tools=[researcher])
        ModelConfig.objects.filter(owner=owner).update(price_input="1", price_output="2")
        return services.start_run(make_session(owner, agent), "what is 6 * 7?")

    return await start()


# The API

pytestmark = pytest.mark.django_db


def test_costs_are_added_up_per_agent_with_exact_decimal_strings(ada: User) -> None:
    session = make_session(ada)
    model_call(session, cost="0.1000000000", author="helper")
    model_call(session, cost="0.2000000000", author="helper")
    model_call(session, cost="0.0000000001", author="other", tokens=(3, 4))
    body = costs(ada, group_by="agent").json()
    assert body["truncated"] is False
    assert body["rows"] == [
        {
            "key": "helper",
            "name": "helper",
            "currency": "USD",
            "cost": "0.3000000000",
            "calls": 2,
            "input_tokens": 20,
            "output_tokens": 10,
        },
        {
            "key": "other",
            "name": "other",
            "currency": "USD",
            "cost": "0.0000000001",
            "calls": 1,
            "input_tokens": 3,
            "output_tokens": 4,
        },
    ]


def test_unknown_costs_and_other_currencies_are_rows_of_their_own(ada: User) -> None:
    session = make_session(ada)
    model_call(session, cost="1")
    model_call(session, cost="2", currency="EUR")
    model_call(session, cost=None)
    rows = costs(ada, group_by="session").json()["rows"]
    assert [(r["key"], r["currency"], r["cost"], r["calls"]) for r in rows] == [
        (str(session.pk), "EUR", "2.0000000000", 1),
        (str(session.pk), "USD", "1.0000000000", 1),
        (str(session.pk), None, None, 1),
    ]


def test_a_user_adds_up_only_their_own_calls(ada: User, bob: User) -> None:
    model_call(make_session(ada), cost="1")
    model_call(make_session(bob), cost="5")
    for grouping in GroupBy:
        if grouping is not GroupBy.USER:
            rows = costs(ada, group_by=grouping.value).json()["rows"]
            assert sum(Decimal(r["cost"]) for r in rows) == 1, grouping


def test_only_staff_add_up_per_user_and_see_every_user(ada: User, bob: User, staff: User) -> None:
    model_call(make_session(ada), cost="1")
    model_call(make_session(bob), cost="5")
    refused = costs(ada, group_by="user")
    assert refused.status_code == 403
    assert refused.json()["code"] == "staff_only"
    rows = costs(staff, group_by="user").json()["rows"]
    assert [(r["name"], r["cost"]) for r in rows] == [
        ("bob", "5.0000000000"),
        ("ada", "1.0000000000"),
    ]


def test_the_date_range_includes_both_days_in_utc(ada: User) -> None:
    session = make_session(ada)
    for days, cost in [(-2, "1"), (-1, "2"), (0, "4"), (1, "8")]:
        model_call(session, cost=cost, at=DAY + timedelta(days=days))
    rows = costs(ada, group_by="day", **{"from": "2026-11-29", "to": "2026-11-30"}).json()["rows"]
    assert [(r["key"], r["cost"]) for r in rows] == [
        ("2026-11-30", "4.0000000000"),
        ("2026-11-29", "2.0000000000"),
    ]
    late = model_call(session, cost="16", at=datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC))
    rows = costs(ada, group_by="day", **{"from": "2026-11-30", "to": "2026-11-30"}).json()["rows"]
    assert rows[0]["cost"] == "20.0000000000", late


def test_bad_parameters_answer_400_naming_each(ada: User) -> None:
    assert error_paths(costs(ada)).keys() == {"group_by"}
    bad = costs(ada, group_by="planet", **{"from": "yesterday"})
    assert error_paths(bad).keys() == {"group_by", "from"}
    assert error_paths(costs(ada, group_by="day", to="2026-13-01")).keys() == {"to"}


def test_a_range_that_ends_before_it_starts_is_empty(ada: User) -> None:
    model_call(make_session(ada), at=DAY)
    backwards = costs(ada, group_by="day", **{"from": "2026-11-30", "to": "2026-11-29"})
    assert backwards.json()["rows"] == []


def test_costs_need_a_signed_in_user() -> None:
    assert client_for(None).get("/api/costs/", {"group_by": "day"}).status_code == 401


def test_costs_are_one_aggregate_query(ada: User, django_assert_num_queries: Any) -> None:
    session = make_session(ada)
    for author in ("a", "b", "c"):
        model_call(session, author=author)
    client = client_for(ada)
    with django_assert_num_queries(1):
        assert client.get("/api/costs/", {"group_by": "agent_version"}).status_code == 200


# Roll-ups add up

CALL = st.fixed_dictionaries(
    {
        "session": st.integers(0, 2),
        "cost": st.one_of(
            st.none(), st.decimals(min_value=0, max_value=1000, places=10, allow_nan=False)
        ),
        "currency": st.sampled_from(["USD", "EUR"]),
        "author": st.sampled_from(["a", "b"]),
        "tool": st.sampled_from(["", "researcher", "transfer_to_agent"]),
        "model": st.sampled_from(["", "m1", "m2"]),
        "run": st.integers(0, 3),
        "days": st.integers(0, 3),
        "tokens": st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
    }
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=st.lists(CALL, max_size=12))
def test_every_grouping_adds_up_to_the_sum_of_its_calls(
    ada: User, staff: User, calls: list[dict[str, Any]]
) -> None:
    with transaction.atomic():
        sessions = [make_session(ada) for _ in range(3)]
        runs = [Run.objects.create(session=sessions[i % 3], message="m") for i in range(3)]
        for call in calls:
            model_call(
                sessions[call["session"]],
                cost=None if call["cost"] is None else str(call["cost"]),
                currency=call["currency"],
                author=call["author"],
                tool=call["tool"],
                model=call["model"],
                run=runs[call["run"]] if call["run"] < 3 else None,
                at=DAY + timedelta(days=call["days"]),
                tokens=call["tokens"],
            )
        expected = _totals(calls)
        for grouping in GroupBy:
            owner = None if grouping is GroupBy.USER else ada.pk
            assert _totals_of(roll_up(model_calls(owner), grouping)) == expected, grouping
        # Staff's per-user rows come from the day totals of ended runs plus the calls no
        # run claimed: the same rows, in the same order, as adding up every call.
        model_days.rebuild([ada.pk])
        later = (DAY.date() + timedelta(days=1), DAY.date() + timedelta(days=2))
        for start, end in [(None, None), later]:
            every_call = roll_up(model_calls(None, start=start, end=end), GroupBy.USER)
            assert model_days.per_user(start, end) == every_call, (start, end)
        transaction.set_rollback(True)


def _totals(calls: list[dict[str, Any]]) -> dict[str | None, tuple[Decimal, int, int, int]]:
    totals: dict[str | None, list[Any]] = defaultdict(lambda: [Decimal(0), 0, 0, 0])
    for call in calls:
        currency = None if call["cost"] is None else call["currency"]
        row = totals[currency]
        row[0] += call["cost"] or 0
        row[1] += 1
        row[2] += call["tokens"][0]
        row[3] += call["tokens"][1]
    return {key: (v[0], v[1], v[2], v[3]) for key, v in totals.items()}


def _totals_of(rows: list[Any]) -> dict[str | None, tuple[Decimal, int, int, int]]:
    totals: dict[str | None, list[Any]] = defaultdict(lambda: [Decimal(0), 0, 0, 0])
    for row in rows:
        total = totals[row.currency]
        total[0] += row.cost or 0
        total[1] += row.calls
        total[2] += row.input_tokens
        total[3] += row.output_tokens
    return {key: (v[0], v[1], v[2], v[3]) for key, v in totals.items()}
