"""The approval inbox page and the navigation's count, scoped to their user: another
user neither sees a waiting call nor decides it (404), and arguments are text."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from studio.models import ApprovalDecision
from tests.studio.test_api_approvals import (  # noqa: F401  (fixtures)
    ended,
    executing,
    pending,
    waiting_session,
)
from tests.support.live import run_manager  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def page_call(user: User, method: str, *args: Any) -> Any:
    """A signed-in browser's request (session cookie, CSRF checks off as in a test)."""
    client = Client()
    client.force_login(user)
    return getattr(client, method)(*args)


async def test_the_page_lists_the_owners_calls_and_refuses_another_user(
    ada: User, bob: User, staff: User
) -> None:
    session = await waiting_session(ada, "what is 1 + <b>2</b>?")
    [item] = await pending(ada)
    page = (await page_call(ada, "get", "/approvals/")).content.decode()
    assert 'id="approvals-badge" data-count="1"' in page
    assert "&lt;b&gt;2&lt;/b&gt;" in page and "<b>2</b>" not in page
    other = (await page_call(bob, "get", "/approvals/")).content.decode()
    assert 'data-count="0"' in other and item["call_id"] not in other

    form: dict[str, Any] = {
        "session": str(session.pk),
        "call_id": item["call_id"],
        "args_hash": item["args_hash"],
        "decision": "deny",
        "reason": "mine",
    }
    refused = await page_call(bob, "post", "/approvals/decide/", form)
    assert refused.status_code == 404
    picked = {"pick": f"{session.pk}:{item['args_hash']}:{item['call_id']}", "decision": "deny"}
    assert (await page_call(bob, "post", "/approvals/decide/", picked)).status_code == 404
    assert await ApprovalDecision.objects.acount() == 0

    decided = await page_call(ada, "post", "/approvals/decide/", form)
    assert decided.status_code == 302
    row = await ApprovalDecision.objects.aget()
    assert (row.channel, row.decision, row.reason) == ("page", "deny", "mine")
    # Staff read the audit trail in the admin, filtered, and cannot change a row.
    listed = await page_call(staff, "get", "/admin/studio/approvaldecision/?channel=page")
    assert listed.status_code == 200 and "ada" in listed.content.decode()
    empty = await page_call(staff, "get", "/admin/studio/approvaldecision/?channel=api")
    assert "ada" not in empty.content.decode().split('id="result_list"')[-1]
    shown = await page_call(staff, "get", f"/admin/studio/approvaldecision/{row.pk}/change/")
    assert shown.status_code == 200 and 'name="_save"' not in shown.content.decode()

    timeline = (await page_call(ada, "get", f"/sessions/{session.pk}/")).content.decode()
    assert 'data-testid="approval-audit"' in timeline
    assert "by ada via page" in timeline and "mine" in timeline
    # The denied call's run goes on to its end before the test's database is flushed.
    assert await ended(session) == "succeeded"


@sync_to_async
def inbox_queries(user: User) -> tuple[int, int]:
    """The pending count a page's badge shows, and the queries that counted it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studio.services.inbox import pending_count

    with CaptureQueriesContext(connection) as queries:
        count = pending_count(user)
    return count, len(queries.captured_queries)


async def test_the_badge_counts_every_waiting_call_in_as_many_queries_for_one_as_for_many(
    ada: User,
) -> None:
    await waiting_session(ada, "what is 1 + 1?")
    await pending(ada)
    one, queries_for_one = await inbox_queries(ada)

    for n in range(2, 5):
        await waiting_session(ada, f"what is {n} + {n}?")
    items = await pending(ada, count=4)
    many, queries_for_many = await inbox_queries(ada)

    assert (one, many) == (1, 4) and len({i["session_id"] for i in items}) == 4
    assert queries_for_many == queries_for_one <= 3
