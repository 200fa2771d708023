"""A policy rule that decides a tool call by itself (allow, deny, rewrite) is in the
approval audit trail: one immutable ``ApprovalDecision`` row, channel ``policy``, no
person, the rule's name and reason, the arguments shown and those the call ran with;
stored with its ``policy_decision`` event, once per call, also when the event is
stored again; listed, filtered and exported like a person's, and shown in the session
timeline. A rule that asks a person (``ask``) and a rule on a model call are no
decisions of their own.

Passes on PostgreSQL too (``DATABASE_URL``)."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core import approvals as core_approvals
from agents_core import events as core_events
from agents_core.events import new_id
from studio import event_rows, session_service
from studio.asgi import application
from studio.models import ApprovalDecision, Event, Run, Session
from tests.studio.conftest import client_for, make_agent, make_session, signed_in
from tests.support.live import (
    run_manager,  # noqa: F401  (an autouse fixture)
    run_to_end,
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
SMALL_SUMS = {"name": "small_sums", "action": "allow", "reason": "cheap to work out"}
BIG_SUMS = {
    "name": "big_sums",
    "action": "rewrite",
    "priority": 5,
    "when": [{"arg": "expression", "op": "matches", "value": r"^\d{3,}"}],
    "set": {"expression": "1 + 1"},
    "reason": "big sums are summarised",
}


@sync_to_async
def ruled_session(owner: User, *policies: dict[str, Any], **spec: Any) -> Session:
    tools = spec.pop("tools", [{"name": "calculator"}])
    agent = make_agent(
        owner, "ruled", instruction=CALCULATOR, tools=tools, policies=list(policies), **spec
    )
    return make_session(owner, agent)


@sync_to_async
def rows_of(session: Session) -> list[ApprovalDecision]:
    return list(ApprovalDecision.objects.filter(session=session).order_by("decided_at", "pk"))


async def run(owner: User, session: Session, text: str) -> Any:
    viewer = await run_to_end(await watch(application, session, owner), text)
    assert viewer.run_status == "succeeded"
    return viewer


async def test_a_denial_by_policy_is_an_audit_row_with_the_rule_and_its_reason(
    ada: User,
) -> None:
    session = await ruled_session(ada, NO_DIVISION)
    viewer = await run(ada, session, "what is 8 / 2?")

    [decided] = viewer.events_of_type("policy_decision")
    [row] = await rows_of(session)
    assert (row.channel, row.decision, row.decided_by_id) == ("policy", "deny", None)
    assert (row.decided_by_name, row.reason) == ("no_division", "division is off today")
    assert (row.call_id, row.tool) == (decided["policy"]["call_id"], "calculator")
    assert row.args_shown == {"expression": "8 / 2"}
    assert row.args_approved is None and not row.edited
    assert row.args_hash == core_approvals.args_hash("calculator", {"expression": "8 / 2"})
    run_id = await sync_to_async(lambda: row.run.pk)()
    assert str(run_id) == viewer.status["run"]["id"]


async def test_an_allow_and_a_rewrite_are_approvals_a_rewrite_with_edited_arguments(
    ada: User,
) -> None:
    session = await ruled_session(ada, BIG_SUMS, SMALL_SUMS)
    await run(ada, session, "what is 2 + 3?")
    await run(ada, session, "what is 700 + 5?")

    allowed, rewritten = await rows_of(session)
    assert (allowed.decision, allowed.decided_by_name) == ("approve", "small_sums")
    assert allowed.args_approved == allowed.args_shown == {"expression": "2 + 3"}
    assert not allowed.edited and allowed.reason == "cheap to work out"
    assert (rewritten.decision, rewritten.decided_by_name) == ("approve", "big_sums")
    assert rewritten.args_shown == {"expression": "700 + 5"}
    assert rewritten.args_approved == {"expression": "1 + 1"}
    assert rewritten.edited and rewritten.reason == "big sums are summarised"
    assert allowed.run_id != rewritten.run_id  # each run's own


async def test_asking_a_person_and_deciding_a_model_call_store_no_policy_row(
    ada: User,
) -> None:
    ask = {"name": "ask_first", "action": "ask"}
    model_rule = {"name": "any_model", "target": "model", "action": "allow"}
    session = await ruled_session(ada, ask, model_rule, approval={"timeout_s": 0.2})
    viewer = await run(ada, session, "what is 2 + 3?")

    actions = [e["policy"]["action"] for e in viewer.events_of_type("policy_decision")]
    assert "ask" in actions and "allow" in actions  # both rules decided something
    [row] = await rows_of(session)
    assert row.channel == "timeout"  # only the time-out's decision, not the ask's


@sync_to_async
def store_again(session: Session, payload: dict[str, Any]) -> core_events.Event:
    """The stored policy event, stored again as a retry would, as a new event for the
    same call (a replay) in a batch and alone, and after the run was resumed (a new run
    of the same invocation): none adds a row. Returns the event."""
    event = core_events.Event.model_validate(payload)
    again = session_service._append_once_sync(session.key, event, retry=False)
    assert again.seq == event.seq  # found as stored, not stored twice
    replay = event.model_copy(update={"id": core_events.new_id(), "seq": None})
    [stored] = event_rows.insert_batch([(session.key, replay)])
    assert isinstance(stored, core_events.Event)
    session_service.append_event_sync(session.key, replay.model_copy(update={"id": new_id()}))
    first = Run.objects.get(session=session)
    Run.objects.create(
        session=session, invocation_id=first.invocation_id, message="", resumed_from=first
    )
    session_service.append_event_sync(session.key, replay.model_copy(update={"id": new_id()}))
    return event


@sync_to_async
def store_two_calls_at_once(session: Session, event: core_events.Event) -> None:
    """Two calls decided in one round, stored in one batch: a row each."""
    assert event.policy is not None
    batch = []
    for call_id in ("parallel-1", "parallel-2"):
        policy = event.policy.model_copy(update={"call_id": call_id})
        batch.append((session.key, event.model_copy(update={"id": new_id(), "policy": policy})))
    event_rows.insert_batch(batch)


async def test_the_row_is_written_once_per_call_whatever_stores_the_event_again(
    ada: User,
) -> None:
    session = await ruled_session(ada, NO_DIVISION)
    await run(ada, session, "what is 8 / 2?")
    payload = await Event.objects.filter(session=session, type="policy_decision").aget()

    event = await store_again(session, payload.payload)
    assert await Event.objects.filter(session=session, type="policy_decision").acount() == 4
    [row] = await rows_of(session)
    assert event.policy is not None and row.call_id == event.policy.call_id

    await store_two_calls_at_once(session, event)
    calls = sorted(r.call_id for r in await rows_of(session))
    assert calls == sorted([row.call_id, "parallel-1", "parallel-2"])


@sync_to_async
def get(user: User, url: str) -> Any:
    return client_for(user).get(url)


async def test_policy_rows_are_listed_filtered_and_exported_to_their_owner_only(
    ada: User, bob: User
) -> None:
    session = await ruled_session(ada, NO_DIVISION)
    await run(ada, session, "what is 8 / 2?")

    listing = (await get(ada, "/api/approvals/decisions/?channel=policy")).json()
    assert [(d["decision"], d["decided_by"], d["channel"], d["reason"]) for d in listing] == [
        ("deny", "no_division", "policy", "division is off today")
    ]
    assert (await get(ada, "/api/approvals/decisions/?channel=api")).json() == []
    assert (await get(bob, "/api/approvals/decisions/?channel=policy")).json() == []
    export = await get(ada, "/api/approvals/decisions/export/?channel=policy")
    [header, line] = list(csv.reader(io.StringIO(export.content.decode())))
    record = dict(zip(header, line, strict=True))
    assert (record["channel"], record["decided_by"], record["decision"]) == (
        "policy",
        "no_division",
        "deny",
    )
    assert (record["args_shown"], record["args_approved"]) == ('{"expression": "8 / 2"}', "")

    for where in (f"/sessions/{session.pk}/", "/approvals/"):  # the timeline, the inbox
        audit = (await html_of(ada, where)).split('data-testid="approval-audit"')[1]
        assert "by rule no_division via policy" in " ".join(audit.split()), where
    assert 'data-testid="approval-audit"' not in await html_of(bob, "/approvals/")


async def html_of(user: User, url: str) -> str:
    page = await sync_to_async(lambda: signed_in(user).get(url))()
    assert page.status_code == 200
    return str(page.content.decode())
