"""``GET /api/runs/compare/``: two runs of real agents (scripted models, the calculator
tool) compared through the API, owner-scoped; and the runs' events as a diff reads them
(after the run's ``start_seq``, with its invocation id: not the session's other runs)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio import costs, services
from studio.diffs.reads import run_record
from studio.models import Agent, ModelConfig, Run, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, make_session
from tests.support.live import script_model

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/runs/compare/"


def calculator_agent(owner: User, name: str, expression: str, answer: str) -> Agent:
    script = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": expression}}]},
        {"text": answer + " {last_tool_result}."},
    ]
    config = script_model(owner, f"{name}_model", script)
    config.set_price(costs.Price(input=Decimal("2.5"), output=Decimal("10")))
    config.save()
    spec = {"name": name, "model": f"{name}_model", "tools": [{"name": "calculator"}]}
    return services.create_agent(owner, name=name, spec=spec)


async def ran(session: Session, text: str) -> Run:
    return await execute_run(await sync_to_async(services.start_run)(session, text))


async def two_runs(owner: User) -> tuple[Run, Run]:
    first = await sync_to_async(calculator_agent)(owner, "adder", "2 + 3", "The sum is")
    second = await sync_to_async(calculator_agent)(owner, "timeser", "2 * 3", "The product is")
    a = await ran(await sync_to_async(make_session)(owner, first), "What is 2 and 3?")
    b = await ran(await sync_to_async(make_session)(owner, second), "What is 2 and 3?")
    return a, b


async def get(user: User | None, **query: Any) -> Any:
    return await sync_to_async(client_for(user).get)(URL, query)


async def test_two_agents_on_the_same_input_compare_step_by_step(ada: User) -> None:
    a, b = await two_runs(ada)
    response = await get(ada, a=a.pk, b=b.pk)
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["a"]["run"]["id"], body["b"]["run"]["id"]) == (str(a.pk), str(b.pk))
    assert (body["a"]["agent"], body["b"]["agent"], body["a"]["agent_version"]) == (
        "adder", "timeser", 1
    )  # fmt: skip
    rows = [(row["status"], (row["a"] or row["b"])["kind"]) for row in body["steps"]]
    # Two agents, one step for step: their steps pair below their roots.
    assert rows == [
        ("same", "user_message"),
        ("same", "model_reply"),
        ("changed", "tool_call"),
        ("changed", "model_reply"),
    ]
    assert body["counts"] == {"same": 2, "changed": 2, "added": 0, "removed": 0}
    tool = body["steps"][2]
    assert (tool["a"]["tool"], tool["a"]["author"], tool["b"]["author"]) == (
        "calculator", "adder", "timeser"
    )  # fmt: skip
    assert tool["a"]["content"] == {"args": {"expression": "2 + 3"}, "result": "5"}
    assert tool["b"]["content"] == {"args": {"expression": "2 * 3"}, "result": "6"}
    assert body["final_answer"]["a"] == "The sum is 5."
    assert body["final_answer"]["b"] == "The product is 6."
    segments = body["final_answer"]["segments"]
    assert "".join(s["text"] for s in segments if s["op"] != "insert") == "The sum is 5."
    assert {"op": "delete", "text": "sum"} in segments
    assert {"op": "insert", "text": "product"} in segments
    figures = {f["name"]: f for f in body["figures"]}
    assert figures["tool_calls"] == {"name": "tool_calls", "a": 1, "b": 1, "delta": 0}
    assert figures["input_tokens"]["a"] == a.input_tokens
    assert figures["input_tokens"]["delta"] == b.input_tokens - a.input_tokens
    assert figures["wall_ms"]["a"] == a.timing["total_ms"]  # type: ignore[index]
    assert a.cost is not None and b.cost is not None and a.cost_complete
    assert body["cost"] == {
        "a": str(a.cost),
        "b": str(b.cost),
        "currency_a": "USD",
        "currency_b": "USD",
        "delta": str(b.cost - a.cost),
        "complete": True,
    }
    assert body["identical"] is False


async def test_one_agent_with_another_script_shows_changed_steps(ada: User) -> None:
    agent = await sync_to_async(calculator_agent)(ada, "calc", "2 + 3", "The sum is")
    session = await sync_to_async(make_session)(ada, agent)
    a = await ran(session, "What is 2 and 3?")
    # The same agent, its model now scripted otherwise: the same steps, changed.
    script = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "2 * 3"}}]},
        {"text": "The sum is {last_tool_result}, really."},
    ]
    await sync_to_async(_rescript)(ada, "calc_model", script)
    b = await ran(session, "What is 2 and 3?")  # a later run of the same session
    body = (await get(ada, a=a.pk, b=b.pk)).json()
    statuses = [row["status"] for row in body["steps"]]
    assert statuses == ["same", "same", "changed", "changed"]
    tool = body["steps"][2]
    assert [(c["where"], c["op"], c["before"], c["after"]) for c in tool["changes"]] == [
        ("args.expression", "changed", "2 + 3", "2 * 3"),
        ("result", "changed", "5", "6"),
    ]
    answer = body["steps"][3]["changes"][0]
    assert answer["where"] == "parts[0].text"
    assert [s for s in answer["segments"] if s["op"] != "equal"] == [
        {"op": "delete", "text": "5"},
        {"op": "insert", "text": "6, really"},
    ]
    # Each run is read from its own events only, though they share a session.
    record_a, record_b = await sync_to_async(run_record)(a), await sync_to_async(run_record)(b)
    assert record_a.events[0].seq == a.start_seq + 1  # type: ignore[operator]
    assert record_b.events[0].seq == b.start_seq + 1  # type: ignore[operator]
    assert {e.invocation_id for e in record_a.events} == {a.invocation_id}
    assert max(e.seq or 0 for e in record_a.events) < (b.start_seq or 0) + 1


def _rescript(owner: User, name: str, script: list[dict[str, Any]]) -> None:
    config = ModelConfig.objects.get(owner=owner, name=name)
    config.options = {**config.options, "script": script}
    config.save()


async def test_a_run_compared_with_itself_is_identical(ada: User) -> None:
    a, _ = await two_runs(ada)
    body = (await get(ada, a=a.pk, b=a.pk)).json()
    assert body["identical"] is True
    assert {row["status"] for row in body["steps"]} == {"same"}
    assert all(row["changes"] == [] for row in body["steps"])
    assert body["cost"]["a"] == body["cost"]["b"] == str(a.cost)
    assert body["cost"]["delta"] == "0.0000000000"
    assert body["final_answer"]["segments"] == []


async def test_another_users_run_is_not_found_on_either_side(ada: User, bob: User) -> None:
    a, b = await two_runs(ada)
    for query in ({"a": a.pk, "b": b.pk}, {"a": b.pk, "b": a.pk}):
        response = await get(bob, **query)
        assert (response.status_code, response.json()["code"]) == (404, "not_found")
    bobs = await sync_to_async(make_session)(bob)
    bobs_run = await ran(bobs, "hello")
    for query in ({"a": a.pk, "b": bobs_run.pk}, {"a": bobs_run.pk, "b": b.pk}):
        response = await get(ada, **query)
        assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert (await get(None, a=a.pk, b=b.pk)).status_code == 401


async def test_ids_that_are_not_uuids_or_missing_are_refused_by_name(ada: User) -> None:
    a, _ = await two_runs(ada)
    response = await get(ada, a="nope", b=a.pk)
    assert response.status_code == 400
    assert [e["path"] for e in response.json()["errors"]] == ["a"]
    response = await get(ada, a=a.pk)
    assert [(e["path"], e["code"]) for e in response.json()["errors"]] == [("b", "required")]
    # The run's own resource is still there, beside the compare route.
    assert (await sync_to_async(client_for(ada).get)(f"/api/runs/{a.pk}/")).status_code == 200
