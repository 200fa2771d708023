"""Policies through Studio: rules set in a spec are checked by the API at their paths,
decide a run's calls over the websocket (allow, deny, rewrite, ask a person), and every
decision is a stored ``policy_decision`` event the viewer got."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio.asgi import application
from studio.models import Session
from tests.studio.conftest import client_for, error_paths, make_agent, make_session, post_agent
from tests.support.live import (
    run_manager,  # noqa: F401  (an autouse fixture)
    run_to_end,
    stored,
    watch,
)

pytestmark = pytest.mark.django_db(transaction=True)

CALCULATOR = (
    "Work out arithmetic with the calculator tool.\nResult: The answer is {last_tool_result}."
)
NO_DIVISION = {
    "name": "no_division",
    "match": "calculator",
    "action": "deny",
    "when": [{"arg": "expression", "op": "contains", "value": "/"}],
    "reason": "division is off today",
}


def test_the_api_checks_policy_rules_at_their_paths(ada: User) -> None:
    make_agent(ada)  # the "scripted" model
    base = {"name": "ruled", "model": "scripted"}

    def rules(*policies: dict[str, Any]) -> dict[str, str]:
        return error_paths(post_agent(ada, {**base, "policies": list(policies)}))

    bad_value = {**NO_DIVISION, "when": [{"arg": "expression", "op": "gt", "value": "big"}]}
    assert rules(bad_value) == {
        "spec.policies.0.when.0.value": "greater than compares with a number"
    }
    rewrite = rules({"name": "r", "action": "rewrite"})
    assert rewrite["spec.policies.0.set"].startswith("a rewrite rule needs the arguments to set")
    model_ask = rules({"name": "r", "target": "model", "action": "ask"})
    assert model_ask == {"spec.policies.0.action": "a model call can only be allowed or denied"}
    named = rules({"name": "no spaces", "action": "deny"})
    assert named["spec.policies.0.name"].startswith("Use 1–64 letters")  # noqa: RUF001
    workflow = {"name": "flow", "type": "sequential", "sub_agents": [base]}
    paths = error_paths(post_agent(ada, {**workflow, "policies": [NO_DIVISION]}))
    assert list(paths) == ["spec.policies"]

    created = post_agent(ada, {**base, "policies": [NO_DIVISION]})
    assert created.status_code == 201, created.content
    assert created.json()["spec"]["policies"] == [NO_DIVISION]


@sync_to_async
def ruled_session(owner: User, *policies: dict[str, Any], **spec: Any) -> Session:
    tools = spec.pop("tools", [{"name": "calculator"}])
    agent = make_agent(
        owner, "ruled", instruction=CALCULATOR, tools=tools, policies=list(policies), **spec
    )
    return make_session(owner, agent)


def decisions(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [
        (e["policy"]["rule"], e["policy"]["action"], e["policy"]["subject"])
        for e in events
        if e["type"] == "policy_decision"
    ]


async def test_a_denied_call_never_runs_and_its_decision_is_stored(ada: User) -> None:
    session = await ruled_session(ada, NO_DIVISION)
    viewer = await run_to_end(await watch(application, session, ada), "what is 8 / 2?")

    assert viewer.run_status == "succeeded"
    assert decisions(viewer.events) == [("no_division", "deny", "calculator")]
    [response] = viewer.events_of_type("tool_response")
    assert response["parts"][0]["is_error"]
    assert response["parts"][0]["result"] == (
        "denied by policy 'no_division': division is off today. The call did not run."
    )
    [decided] = viewer.events_of_type("policy_decision")
    assert decided["policy"]["call_id"] == response["parts"][0]["call_id"]
    assert decided["seq"] < response["seq"]
    assert viewer.events == await stored(session)


async def test_a_rewrite_runs_the_call_with_the_rule_s_arguments(ada: User) -> None:
    halve = {
        "name": "small_sums",
        "match": "calc*",
        "action": "rewrite",
        "when": [{"arg": "expression", "op": "matches", "value": r"^\d{3,}"}],
        "set": {"expression": "1 + 1"},
    }
    session = await ruled_session(ada, NO_DIVISION, halve)
    viewer = await run_to_end(await watch(application, session, ada), "what is 700 + 5?")

    [decided] = viewer.events_of_type("policy_decision")
    assert decided["policy"]["rewritten_args"] == {"expression": "1 + 1"}
    assert decided["policy"]["args"] == {"expression": "700 + 5"}
    assert viewer.events_of_type("tool_response")[0]["parts"][0]["result"] == "2"


async def test_an_ask_rule_waits_for_a_person_and_the_approval_flag_is_a_rule(
    ada: User,
) -> None:
    big = {
        "name": "big_sums",
        "action": "ask",
        "priority": 10,
        "when": [{"arg": "expression", "op": "matches", "value": r"\d{3,}"}],
    }
    small = {"name": "small_sums", "action": "allow"}
    tools = [{"name": "calculator", "requires_approval": True}]
    session = await ruled_session(ada, big, small, tools=tools)

    # The allow rule outranks the approval flag: a small sum runs without asking.
    viewer = await run_to_end(await watch(application, session, ada), "what is 2 + 3?")
    assert decisions(viewer.events) == [("small_sums", "allow", "calculator")]
    assert not viewer.events_of_type("approval_request")

    # A big one asks: the decision, then the request, then a person's answer over the API.
    await viewer.send({"type": "user_message", "text": "what is 500 + 5?"})
    await viewer.until(lambda v: len(v.events_of_type("approval_request")) == 1)
    [request] = viewer.events_of_type("approval_request")
    assert decisions(viewer.events)[-1] == ("big_sums", "ask", "calculator")
    body = {
        "call_id": request["approval"]["call_id"],
        "args_hash": request["approval"]["args_hash"],
        "decision": "approve",
    }
    url = f"/api/sessions/{session.pk}/approvals/"
    answered = await sync_to_async(client_for(ada).post)(url, body, format="json")
    assert answered.status_code == 204, answered.content
    await viewer.until_ended()
    assert viewer.events_of_type("tool_response")[-1]["parts"][0]["result"] == "505"


async def test_a_denied_model_call_fails_the_run_with_policy_denied(ada: User) -> None:
    one_call = {
        "name": "one_call",
        "target": "model",
        "action": "deny",
        "when": [{"arg": "model_calls", "op": "ge", "value": 1}],
        "reason": "one model call a turn",
    }
    session = await ruled_session(ada, one_call)
    viewer = await run_to_end(await watch(application, session, ada), "what is 2 + 3?")

    assert viewer.run_status == "failed"
    assert [d[:2] for d in decisions(viewer.events)] == [("one_call", "deny")]
    [error] = viewer.events_of_type("error")
    assert error["error"]["code"] == "policy_denied"
    assert viewer.events == await stored(session)
