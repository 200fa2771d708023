"""Forking a session (``services.forks``): what a fork holds, edits of its fork point,
what is refused, the fork tree, and deleting a parent."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from agents_core import events as core_events
from studio import services
from studio.errors import ConflictError, InvalidInputError
from studio.models import Event, Run, RunStatus, Session
from studio.services import forks
from studio.services.fork_copies import FORKED
from studio.session_service import append_event_sync
from tests.studio.conftest import make_agent, make_session
from tests.support.forks import ANSWER, RESULT, E, call, record_turn, recorded_session

pytestmark = pytest.mark.django_db

COPIED_AS_IS = {"id", "seq", "session_id"}


def payloads(session: Session) -> list[dict[str, Any]]:
    return list(session.events.order_by("seq").values_list("payload", flat=True))


def without_identity(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k not in COPIED_AS_IS}


@pytest.fixture
def parent(ada: User) -> Session:
    return recorded_session(make_session(ada, make_agent(ada, "calc"), title="sums"))


def test_a_fork_holds_copies_of_the_events_up_to_its_point_and_the_state_they_made(
    parent: Session,
) -> None:
    fork = forks.fork_session(parent, 4)

    original, copied = payloads(parent)[:4], payloads(fork)
    assert [p["seq"] for p in copied] == [1, 2, 3, 4]
    assert [without_identity(p) for p in copied] == [without_identity(p) for p in original]
    assert {p["session_id"] for p in copied} == {fork.key}
    assert not {p["id"] for p in copied} & {p["id"] for p in payloads(parent)}
    rows = list(fork.events.order_by("seq"))
    assert [row.created_at for row in rows] == [
        row.created_at for row in parent.events.order_by("seq")[:4]
    ]
    assert fork.state == {"last_result": RESULT}  # not the answer's: it came after #4
    assert (fork.owner_id, fork.parent_id, fork.fork_seq) == (parent.owner_id, parent.pk, 4)
    assert fork.fork_event_id == original[-1]["id"]
    assert (fork.last_seq, fork.agent_version_id) == (4, parent.agent_version_id)
    assert fork.title == "sums · fork at #4"
    # The run the fork point cut short is copied, interrupted there; it costs nothing again.
    [run] = fork.runs.all()
    [first, _] = parent.runs.order_by("created_at")
    assert (run.copied_from_id, run.invocation_id, run.start_seq) == (
        first.pk,
        first.invocation_id,
        0,
    )
    assert (run.status, run.error_code, run.created_at) == (
        RunStatus.INTERRUPTED,
        FORKED,
        first.created_at,
    )
    assert fork.status == "interrupted"
    assert parent.events.count() == 10  # the parent is untouched


def test_a_fork_at_the_end_of_a_turn_copies_its_run_as_it_ended(parent: Session) -> None:
    fork = forks.fork_session(parent, 6)
    [run] = fork.runs.all()
    assert (run.status, run.error_code) == (RunStatus.SUCCEEDED, "")
    assert fork.state == {"last_result": RESULT, "answer": ANSWER}
    # Model calls are not counted twice: the copy's usage stays in its payload only.
    answer = fork.events.get(seq=5)
    assert answer.payload["usage"]["input_tokens"] == 12
    assert (answer.usage, answer.cost) == (None, None)
    fork.refresh_from_db()
    assert fork.cost is None


def test_the_edited_tool_result_is_marked_with_what_it_said_before(parent: Session) -> None:
    fork = forks.fork_session(parent, 4, edit=forks.Edit("5"))
    point = fork.events.get(seq=4).to_core()
    [result] = point.tool_results
    assert (result.call_id, result.output) == ("c1", "5")
    assert point.edited == core_events.EditInfo(what="tool_result", original=RESULT, call_id="c1")
    assert parent.events.get(seq=4).to_core().tool_results[0].output == RESULT


def test_an_edited_reply_changes_its_text_and_the_state_it_set(parent: Session) -> None:
    fork = forks.fork_session(parent, 5, edit=forks.Edit("1 + 1 is 3."))
    point = fork.events.get(seq=5)
    assert (point.text, point.payload["edited"]["original"]) == ("1 + 1 is 3.", ANSWER)
    assert fork.state["answer"] == "1 + 1 is 3."


def test_an_edited_user_message_is_the_copied_runs_message(parent: Session) -> None:
    fork = forks.fork_session(parent, 7, edit=forks.Edit("thanks a lot"))
    point = fork.events.get(seq=7).to_core()
    assert (point.text, point.edited.what if point.edited else None) == (
        "thanks a lot",
        "user_message",
    )
    last = fork.runs.order_by("-created_at").first()
    assert last is not None and (last.message, last.status) == (
        "thanks a lot",
        RunStatus.INTERRUPTED,
    )


@pytest.mark.parametrize(
    ("seq", "edit", "error", "code"),
    [
        (0, None, InvalidInputError, "no_such_event"),
        (11, None, InvalidInputError, "no_such_event"),
        (3, None, ConflictError, "open_tool_call"),
        (2, forks.Edit("x"), InvalidInputError, "not_editable"),
        (4, forks.Edit("x", call_id="nope"), InvalidInputError, "no_such_call"),
    ],
)
def test_refused_fork_points_say_why_and_store_nothing(
    parent: Session, seq: int, edit: forks.Edit | None, error: type[Exception], code: str
) -> None:
    before = Session.objects.count()
    with pytest.raises(error) as refused:
        forks.fork_session(parent, seq, edit=edit)
    problems = getattr(refused.value, "problems", None)
    assert (problems[0].code if problems else refused.value.code) == code  # type: ignore[attr-defined]
    assert Session.objects.count() == before


def test_a_fork_point_inside_a_pending_approval_is_refused(ada: User) -> None:
    session = make_session(ada, make_agent(ada, "calc"))
    record_turn(session, "delete it", [{"type": E.AGENT_MESSAGE, "parts": [call("c9", "rm")]}])
    run = session.runs.get()
    append_event_sync(
        session.key,
        core_events.Event(
            type=E.APPROVAL_REQUEST,
            invocation_id=run.invocation_id,
            session_id=session.key,
            author="calc",
            approval=core_events.ApprovalInfo(
                call_id="c9", tool="calculator", args={}, args_hash="h"
            ),
        ),
    )
    last = session.events.order_by("-seq").first()
    assert last is not None
    with pytest.raises(ConflictError) as refused:
        forks.fork_session(session, last.seq)
    assert refused.value.code == "pending_approval"


def test_forks_of_forks_make_a_tree_that_outlives_a_deleted_parent(parent: Session) -> None:
    first = forks.fork_session(parent, 4)
    second = forks.fork_session(parent, 6)
    grandchild = forks.fork_session(first, 2)
    tree = forks.fork_tree(grandchild)
    assert [(s.pk, depth) for s, depth in forks.tree_rows(tree)] == [
        (parent.pk, 0),
        (first.pk, 1),
        (grandchild.pk, 2),
        (second.pk, 1),
    ]
    services.delete_session(parent)
    first.refresh_from_db()
    assert (first.parent_id, first.fork_seq, first.events.count()) == (None, 4, 4)
    assert [s.pk for s, _ in forks.tree_rows(forks.fork_tree(grandchild))] == [
        first.pk,
        grandchild.pk,
    ]
    assert Run.objects.filter(session=first).get().copied_from_id is None
    assert Event.objects.filter(session=grandchild).count() == 2


def test_a_fork_goes_on_with_another_version_of_the_same_agent_only(
    ada: User, parent: Session
) -> None:
    agent = parent.agent_version.agent  # type: ignore[union-attr]
    newer, _ = services.save_agent_spec(agent, {**(agent.spec or {}), "instruction": "Reply: hi"})
    fork = forks.fork_session(parent, 6, agent_version=newer)
    assert fork.agent_version_id == newer.pk
    other = make_agent(ada, "other").current_version
    with pytest.raises(InvalidInputError):
        forks.fork_session(parent, 6, agent_version=other)


def test_going_on_without_a_message_needs_a_point_the_model_answers_next(
    parent: Session,
) -> None:
    at_reply = forks.fork_session(parent, 5)
    with pytest.raises(ConflictError) as refused:
        forks.continue_fork(at_reply)
    assert refused.value.code == "message_required"
    run = forks.continue_fork(at_reply, "and 2 + 2?")
    assert (run.message, run.resumed_from_id) == ("and 2 + 2?", None)

    at_result = forks.fork_session(parent, 4)
    cut = at_result.runs.get()
    resumed = forks.continue_fork(at_result)
    assert (resumed.resumed_from_id, resumed.message, resumed.start_seq) == (cut.pk, "", 4)
    assert resumed.status == RunStatus.QUEUED
    assert at_result.runs.count() == 2


def test_a_session_whose_run_is_still_active_forks_with_that_run_cut_short(
    parent: Session,
) -> None:
    queued = services.start_run(parent, "and 3 + 3?")  # stored at #11; never claimed here
    fork = forks.fork_session(parent, 11)
    last = fork.runs.order_by("-created_at").first()
    assert last is not None
    assert (last.copied_from_id, last.status, last.error_code) == (
        queued.pk,
        RunStatus.INTERRUPTED,
        FORKED,
    )
    assert last.ended_at is not None and last.start_seq == 10
    queued.refresh_from_db()
    assert queued.status == RunStatus.QUEUED  # the parent's run goes on as it was
    assert forks.can_go_on_without_message(fork, last)
