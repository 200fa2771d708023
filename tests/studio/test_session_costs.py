"""A session's cost: the sum of its ended runs' costs, kept by ``end_run``, in the
session API payload and in the session list, which sorts by it."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from studio import services
from studio.models import Session
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, make_agent, make_session


@pytest.mark.django_db(transaction=True)
async def test_a_sessions_cost_is_the_sum_of_its_ended_runs(ada: User) -> None:
    @sync_to_async
    def start(session: Session | None = None) -> object:
        if session is None:
            services.create_model_config(ada.pk, name="scripted", provider="scripted")
            session = make_session(ada, make_agent(ada))
        return services.start_run(session, "hello")

    first = await execute_run(await start())
    session = await Session.objects.aget(pk=first.session_id)
    assert (session.cost, session.cost_complete) == (first.cost, True)
    second = await execute_run(await start(session))
    session = await Session.objects.aget(pk=first.session_id)
    assert first.cost is not None and second.cost is not None
    assert session.cost == first.cost + second.cost
    body = (await sync_to_async(client_for(ada).get)(f"/api/sessions/{session.pk}/")).json()
    assert (body["cost"], body["cost_currency"], body["cost_complete"]) == (
        str(session.cost),
        "USD",
        True,
    )


pytestmark = pytest.mark.django_db


def test_a_session_without_an_ended_run_has_no_cost_in_the_api(ada: User) -> None:
    session = make_session(ada)
    body = client_for(ada).get(f"/api/sessions/{session.pk}/").json()
    assert (body["cost"], body["cost_currency"]) == (None, None)


def _page(user: User, query: str = "") -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/sessions/{query}")
    assert response.status_code == 200
    return response.content.decode()


def _sessions(ada: User) -> list[Session]:
    made = []
    for title, cost in [("cheap", "0.001"), ("dear", "2.5"), ("unknown", None), ("mid", "0.5")]:
        session = make_session(ada, title=title)
        Session.objects.filter(pk=session.pk).update(
            cost=None if cost is None else Decimal(cost), cost_currency="USD"
        )
        made.append(session)
    return made


def test_the_session_list_shows_each_sessions_cost(ada: User) -> None:
    _sessions(ada)
    html = _page(ada)
    costs = re.findall(r'data-testid="cost">([^<]*)<', html)
    assert sorted(costs) == sorted(["$0.0010", "$2.50", "—", "$0.50"])


def test_the_session_list_sorts_by_cost_both_ways_unknown_last(ada: User) -> None:
    _sessions(ada)
    titles = re.compile(r'class="title"[^>]*>([^<]*)<')
    assert titles.findall(_page(ada, "?sort=-cost")) == ["dear", "mid", "cheap", "unknown"]
    assert titles.findall(_page(ada, "?sort=cost")) == ["cheap", "mid", "dear", "unknown"]
    html = _page(ada, "?sort=-cost")
    assert 'aria-sort="descending"' in html and "?sort=cost" in html
