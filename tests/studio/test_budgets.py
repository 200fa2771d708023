"""Budgets: a run is stopped before the model call that could take it past its agent
version's run budget or a daily budget (the version's, or its user's), with a terminal
``budget_exceeded`` error; concurrent runs never overspend a daily budget they share."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth.models import User
from django.utils import timezone

from agents_core.contracts import Usage
from agents_core.spend import CallEstimate
from studio import budgets, runs, services
from studio.agents import specs as agent_specs
from studio.models import DayHold, DaySpend, Event, ModelConfig, Run, UserBudget
from studio.runs import recovery
from studio.runs.execute import execute_run
from tests.studio.conftest import (
    client_for,
    error_paths,
    make_agent,
    make_session,
    post_agent,
    simple_spec,
)

pytestmark = pytest.mark.django_db(transaction=True)

USAGE = {"input_tokens": 1_000, "output_tokens": 1_000}
CALL_COST = Decimal("0.005")
"""A call of ``USAGE`` at the scripted model's made-up price (1 and 4 per million)."""
WORST_CASE = Decimal("0.016384")
"""At least: no max output named, so 4,096 tokens at 4 per million (plus the prompt)."""
TOOL_STEP = {"tool_calls": [{"name": "calculator", "args": {"expression": "1+1"}}]}


def priced_scripted(owner: User, step: dict[str, Any], latency_s: float = 0.0) -> None:
    """The scripted model at its made-up price, answering ``step`` (with ``USAGE``)
    to every call."""
    options = {"script": [{**step, "usage": USAGE}], "latency_s": latency_s}
    services.create_model_config(owner.pk, name="scripted", provider="scripted", options=options)


@sync_to_async
def queued_run(owner: User, **spec: Any) -> Run:
    agent = make_agent(owner, **spec)
    return services.start_run(make_session(owner, agent), "hello")


async def model_calls(run: Run) -> int:
    rows = Event.objects.filter(session_id=run.session_id, type="agent_message")
    return await rows.acount()


async def error_of(run: Run) -> dict[str, Any]:
    row = await Event.objects.filter(session_id=run.session_id, type="error").alast()
    assert row is not None
    return dict(row.payload["error"])


@pytest.mark.parametrize(
    ("budget", "limit", "spent"),
    [
        ({"run_cost": "0.02"}, "run_cost", "0.0050000000 USD spent"),
        ({"run_tokens": 6_000}, "run_tokens", "2000 tokens spent"),
    ],
)
async def test_a_run_stops_before_the_call_that_could_pass_its_run_budget(
    ada: User, budget: dict[str, Any], limit: str, spent: str
) -> None:
    await sync_to_async(priced_scripted)(ada, TOOL_STEP)
    run = await queued_run(ada, tools=[{"name": "calculator"}], budget=budget)

    ended = await execute_run(run)

    # The first call fits; after it, the second's worst case could pass the budget: it
    # is refused before the model is called.
    assert await model_calls(ended) == 1
    assert ended.status == "failed"
    error = await error_of(ended)
    assert (error["code"], error["limit"], error["failure"]) == (
        "budget_exceeded",
        limit,
        "terminal",
    )
    assert "the run budget of agent version helper v1" in error["message"]
    assert spent in error["message"]
    assert str(next(iter(budget.values()))) in error["message"]


async def test_a_users_daily_budget_stops_a_later_run_before_its_model_call(ada: User) -> None:
    await sync_to_async(priced_scripted)(ada, {"text": "hello"})
    await UserBudget.objects.acreate(user=ada, day_cost=Decimal("0.02"))

    first = await execute_run(await queued_run(ada))
    assert (first.status, await model_calls(first)) == ("succeeded", 1)
    session = await sync_to_async(lambda: first.session)()
    second = await execute_run(await sync_to_async(services.start_run)(session, "again"))

    assert second.status == "failed"
    assert await model_calls(second) == 1  # still only the first run's call
    error = await error_of(second)
    assert (error["code"], error["limit"]) == ("budget_exceeded", "user_day_cost")
    assert "the daily budget of user ada" in error["message"]
    day = await DaySpend.objects.aget(scope=f"user:{ada.pk}")
    assert (day.cost_spent, day.cost_reserved) == (CALL_COST, 0)
    assert (day.tokens_spent, day.tokens_reserved) == (2_000, 0)


async def test_concurrent_runs_never_overspend_a_daily_budget_they_share(ada: User) -> None:
    limit = Decimal("0.025")  # one worst case fits, two do not
    await sync_to_async(priced_scripted)(ada, {"text": "hello"}, latency_s=0.3)
    await UserBudget.objects.acreate(user=ada, day_cost=limit)
    runs = [await queued_run(ada, name=f"helper{i}") for i in range(3)]

    ended = await asyncio.gather(*(execute_run(run) for run in runs))

    refused = [run for run in ended if run.status == "failed"]
    assert refused
    assert {(await error_of(run))["code"] for run in refused} == {"budget_exceeded"}
    day = await DaySpend.objects.aget(scope=f"user:{ada.pk}")
    assert day.cost_reserved == 0
    assert day.cost_spent == CALL_COST * (len(ended) - len(refused)) <= limit
    assert sum(run.cost or 0 for run in ended) == day.cost_spent


async def test_an_agent_versions_daily_budget_is_shared_by_its_runs(ada: User) -> None:
    await sync_to_async(priced_scripted)(ada, {"text": "hello"})
    first = await execute_run(await queued_run(ada, budget={"day_tokens": 6_000}))
    session = await sync_to_async(lambda: first.session)()
    second = await execute_run(await sync_to_async(services.start_run)(session, "again"))

    assert (first.status, second.status) == ("succeeded", "failed")
    error = await error_of(second)
    assert (error["code"], error["limit"]) == ("budget_exceeded", "day_tokens")
    assert "the daily budget of agent version helper v1" in error["message"]


async def test_a_cost_budget_refuses_a_model_without_a_price(ada: User) -> None:
    await ModelConfig.objects.acreate(owner=ada, name="scripted", provider="scripted")
    ended = await execute_run(await queued_run(ada, budget={"run_cost": "1"}))

    assert ended.status == "failed" and await model_calls(ended) == 0
    error = await error_of(ended)
    assert (error["code"], error["limit"]) == ("budget_exceeded", "unpriced")
    assert "no price" in error["message"]


@pytest.mark.parametrize(
    ("budget", "path"),
    [
        ({"run_cost": "-1"}, "spec.budget.run_cost"),
        ({"day_cost": "0"}, "spec.budget.day_cost"),
        ({"run_cost": "0.0000001"}, "spec.budget.run_cost"),
        ({"day_cost": "lots"}, "spec.budget.day_cost"),
        ({"run_tokens": 0}, "spec.budget.run_tokens"),
        ({"day_tokens": -5}, "spec.budget.day_tokens"),
        ({"per_hour": 1}, "spec.budget.per_hour"),
    ],
)
def test_a_bad_budget_is_refused_at_its_path(ada: User, budget: Any, path: str) -> None:
    make_agent(ada, name="other")
    assert path in error_paths(post_agent(ada, simple_spec("budgeted", budget=budget)))


def test_a_budget_on_a_sub_agent_is_refused_at_its_path(ada: User) -> None:
    make_agent(ada, name="other")
    child = simple_spec("child", budget={"run_cost": "1"})
    paths = error_paths(post_agent(ada, simple_spec("parent", sub_agents=[child])))
    assert "spec.sub_agents.0.budget" in paths


def test_users_read_their_own_budget_and_todays_spend(ada: User, bob: User) -> None:
    UserBudget.objects.create(user=ada, day_cost=Decimal("2.5"), day_tokens=10_000)
    mine = client_for(ada).get("/api/budget/")
    assert mine.status_code == 200, mine.content
    body = mine.json()
    assert (body["day_cost"], body["day_tokens"], body["currency"]) == ("2.500000", 10_000, "USD")
    assert (body["cost_spent"], body["cost_reserved"]) == ("0.0000000000", "0.0000000000")
    assert (body["tokens_spent"], body["tokens_reserved"]) == (0, 0)
    unlimited = client_for(bob).get("/api/budget/").json()
    assert (unlimited["day_cost"], unlimited["day_tokens"]) == (None, None)
    assert client_for(None).get("/api/budget/").status_code in (401, 403)
    assert client_for(ada).put("/api/budget/", {"day_cost": "100"}).status_code == 405


def test_staff_read_and_set_any_users_budget_through_the_api(
    ada: User, bob: User, staff: User
) -> None:
    url = f"/api/users/{ada.pk}/budget/"
    answer = client_for(staff).put(url, {"day_cost": "1.5", "day_tokens": 5_000}, format="json")
    assert answer.status_code == 200, answer.content
    assert (answer.json()["day_cost"], answer.json()["day_tokens"]) == ("1.500000", 5_000)
    mine = client_for(ada).get("/api/budget/").json()
    assert (mine["day_cost"], mine["day_tokens"]) == ("1.500000", 5_000)
    lifted = client_for(staff).put(url, {"day_cost": None}, format="json").json()
    assert (lifted["day_cost"], lifted["day_tokens"]) == (None, None)
    assert UserBudget.objects.get(user=ada).day_cost is None
    # Users cannot set theirs or read another's; bad values name their field.
    assert client_for(ada).put(url, {"day_cost": "100"}, format="json").status_code == 403
    assert client_for(bob).get(url).status_code == 403
    bad = client_for(staff).put(url, {"day_cost": "-1", "day_tokens": 0}, format="json")
    assert bad.status_code == 400 and set(error_paths(bad)) == {"day_cost", "day_tokens"}
    assert client_for(staff).get("/api/users/999999/budget/").status_code == 404


def test_staff_set_a_users_budget_in_the_admin(admin_client: Any, ada: User) -> None:
    response = admin_client.post(
        "/admin/studio/userbudget/add/", {"user": ada.pk, "day_cost": "1.25", "day_tokens": ""}
    )
    assert response.status_code == 302, response.content
    budget = UserBudget.objects.get(user=ada)
    assert (budget.day_cost, budget.day_tokens) == (Decimal("1.25"), None)
    refused = admin_client.post(
        "/admin/studio/userbudget/add/", {"user": ada.pk, "day_cost": "-1", "day_tokens": "0"}
    )
    assert refused.status_code == 200  # the form again, with its errors
    assert admin_client.get("/admin/studio/dayspend/").status_code == 200


def test_a_call_cut_short_by_its_process_dying_gives_back_what_it_held(ada: User) -> None:
    priced_scripted(ada, {"text": "hello"})
    UserBudget.objects.create(user=ada, day_cost=Decimal("0.02"))
    run = services.start_run(make_session(ada, make_agent(ada)), "hello")
    version = run.session.agent_version
    assert version is not None
    guard = budgets.guard_for(version, ada, agent_specs.agent_prices(version), run.pk)
    # A call in flight: the guard held its worst case back before calling the model.
    estimate = CallEstimate("helper", "scripted", prompt_tokens=100, max_output_tokens=None)
    hold = async_to_sync(guard.reserve)(estimate)
    day = DaySpend.objects.get(scope=f"user:{ada.pk}")
    assert day.cost_reserved >= WORST_CASE and DayHold.objects.filter(run=run).count() == 1

    # Its process dies: the lease runs out and the sweep ends the run interrupted.
    Run.objects.filter(pk=run.pk).update(
        status="running", owner_process="gone", lease_expires_at=timezone.now() - timedelta(1)
    )
    assert recovery.interrupt(run.pk, runs.executor()) is not None
    day.refresh_from_db()
    assert (day.cost_reserved, day.tokens_reserved) == (0, 0)
    assert not DayHold.objects.exists()

    # Had the call come back after all, it counts what it spent and releases nothing twice.
    async_to_sync(hold.settle)(Usage(**USAGE))
    day.refresh_from_db()
    assert (day.cost_reserved, day.cost_spent, day.tokens_spent) == (0, CALL_COST, 2_000)
