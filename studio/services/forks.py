"""Forks: a new session that copies another up to one of its events (the fork point),
whose copy of that event the user may edit, and which then goes on live.

``fork_session`` copies, in one transaction, the parent's events up to and including
the fork point (new ids, seq from 1, payloads otherwise as stored, times kept), the
state they add up to (their ``state_delta``, replayed), and its runs as far as they
got (``fork_copies``). A fork point inside an open tool call or a pending approval is
refused: the fork would hold a call nobody can answer.

``continue_fork`` goes on live, through the ordinary run services: with a new user
message, a new run; without one, from the record where it stops, so an edited tool
result or user message is what the model reads next (``resume_interrupted_run`` on
the copy of the run the fork cut, whose agents read the record, edited step included).

``fork_tree`` is the tree a fork belongs to, rooted at its oldest ancestor still
stored (deleting a parent leaves its forks readable: they hold their own copies).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction

from agents_core import events as core_events
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import AgentVersion, Run, RunStatus, Session
from studio.services import fork_copies
from studio.services.sessions import (
    refuse_ingested,
    refuse_read_only,
    resume_interrupted_run,
    start_run,
)

E = core_events.EventType
RESUMABLE_POINTS = frozenset({E.USER_MESSAGE, E.TOOL_RESPONSE})
"""Fork points a fork goes on from without a new message: the model answers them next."""
MAX_TREE_DEPTH = 100
"""How far up ``fork_tree`` looks for the oldest ancestor."""


@dataclass(frozen=True, slots=True)
class Edit:
    """What the fork point says instead: the user's message text, the tool's result
    (``call_id`` names which, when the response answers several calls), or the model's
    reply text."""

    text: str
    call_id: str | None = None


def fork_session(
    session: Session,
    seq: int,
    *,
    edit: Edit | None = None,
    agent_version: AgentVersion | None = None,
    title: str = "",
) -> Session:
    """A new session of ``session``'s owner holding its events up to and including
    ``seq`` (the last one edited as ``edit`` says), pinned to ``agent_version`` (a
    version of the same agent; by default ``session``'s own).

    Refused: no event ``seq`` (``InvalidInputError`` ``seq``/``no_such_event``); a fork
    point inside a pending approval or an open tool call (``ConflictError``
    ``pending_approval``, ``open_tool_call``); an edit of an event that has nothing to
    edit or names no call it answers (``InvalidInputError`` ``edit``); another agent's
    version (``InvalidInputError`` ``agent_version``); an imported or ingested session
    (``ConflictError`` ``session_read_only``, ``run_ingested``)."""
    refuse_read_only(session)
    refuse_ingested(session.pk)
    rows = list(session.events.filter(seq__lte=seq).order_by("seq"))
    if seq < 1 or not rows or rows[-1].seq != seq:
        problem = Problem((), "no_such_event", f"this session has no event #{seq}")
        raise InvalidInputError("seq", [problem])
    events = [row.to_core() for row in rows]
    check_closed(events)
    if edit is not None:
        events[-1] = fork_copies.edited(events[-1], edit.text, edit.call_id)
    version = _version_for(session, agent_version)
    with transaction.atomic():
        fork = Session.objects.create(
            owner_id=session.owner_id,
            app_name=session.app_name,
            agent_version=version,
            title=title or _title_of(session, seq),
            parent=session,
            fork_seq=seq,
            fork_event_id=rows[-1].payload["id"],
        )
        fork_copies.copy_into(fork, session, rows, events)
    return fork


def _title_of(session: Session, seq: int) -> str:
    base = session.title or "Untitled session"
    suffix = f" · fork at #{seq}"
    return f"{base[: 200 - len(suffix)]}{suffix}"


def _version_for(session: Session, chosen: AgentVersion | None) -> AgentVersion | None:
    if chosen is None:
        return session.agent_version
    current = session.agent_version
    if current is None or chosen.agent_id != current.agent_id:
        message = "a fork goes on with a version of the same agent as its parent"
        raise InvalidInputError("agent_version", [Problem((), "other_agent", message)])
    return chosen


def check_closed(events: list[core_events.Event]) -> None:
    """Refuse a fork point that leaves an approval pending or a tool call open: the
    fork would wait for what nobody can give it."""
    requested = {e.approval.call_id for e in events if e.type is E.APPROVAL_REQUEST and e.approval}
    decided = {e.approval.call_id for e in events if e.type is E.APPROVAL_DECISION and e.approval}
    if pending := sorted(requested - decided):
        raise ConflictError(
            f"the fork point is inside a pending approval (call {pending[0]}); fork at or "
            "after its decision, or before the call",
            code="pending_approval",
        )
    calls = {
        part.call_id: part.name
        for event in events
        if event.type is E.AGENT_MESSAGE
        for part in event.parts
        if isinstance(part, core_events.ToolCallPart)
    }
    answered = {result.call_id for event in events for result in event.tool_results}
    if open_calls := [call for call in calls if call not in answered]:
        raise ConflictError(
            f"the fork point is inside an open tool call ({calls[open_calls[0]]}, call "
            f"{open_calls[0]}); fork at its result, or before the call",
            code="open_tool_call",
        )


def continue_fork(fork: Session, message: str = "") -> Run:
    """Go on live in ``fork``: a new run for ``message``, or, without one, a run that
    goes on from the fork point (a user message or a tool result: the model answers it
    next, as edited). ``ConflictError`` ``message_required`` when the fork point needs
    a new message to go on from (the model's reply, or a finished turn), or once the
    fork has gone on already; the run services' own checks apply too."""
    refuse_ingested(fork.pk)
    if message:
        return start_run(fork, message)
    cut = _cut_run(fork, fork.runs.order_by("-created_at").first())
    if cut is None:
        raise ConflictError(
            "this fork goes on from a new message: send one (its fork point is not a user "
            "message or tool result the model answers next, or it went on already)",
            code="message_required",
        )
    return resume_interrupted_run(cut)


def _cut_run(fork: Session, latest: Run | None) -> Run | None:
    """The copy of the run the fork cut at its fork point, while it is the fork's latest
    run (``latest``) and the fork point is one the model answers next."""
    if latest is None or latest.status != RunStatus.INTERRUPTED:
        return None
    if latest.error_code != fork_copies.FORKED or latest.copied_from_id is None:
        return None
    point = fork.events.filter(seq=fork.last_seq).values_list("type", flat=True).first()
    return latest if point in RESUMABLE_POINTS else None


def can_go_on_without_message(fork: Session, latest: Run | None) -> bool:
    """Whether ``fork`` goes on from its fork point without a new message; ``latest``:
    its newest run (``None``: it has none), as the caller read it."""
    return _cut_run(fork, latest) is not None


@dataclass(slots=True)
class TreeNode:
    """A session of a fork tree, with its forks."""

    session: Session
    children: list[TreeNode] = field(default_factory=list)


def fork_tree(session: Session) -> TreeNode:
    """The fork tree ``session`` belongs to, from its oldest stored ancestor down (a
    session neither forked nor forked from is a tree of one). Children by creation."""
    root = session
    for _ in range(MAX_TREE_DEPTH):
        if root.parent_id is None:
            break
        parent = Session.objects.filter(pk=root.parent_id).defer("state").first()
        if parent is None:
            break
        root = parent
    node = TreeNode(root)
    level = [node]
    for _ in range(MAX_TREE_DEPTH):
        by_parent = {n.session.pk: n for n in level}
        found = Session.objects.filter(parent__in=list(by_parent)).defer("state")
        level = []
        for child in found.order_by("created_at"):
            added = TreeNode(child)
            by_parent[child.parent_id].children.append(added)  # type: ignore[index]
            level.append(added)
        if not level:
            break
    return node


def tree_rows(node: TreeNode, depth: int = 0) -> Iterable[tuple[Session, int]]:
    """The tree's sessions in reading order, each with its depth (0: the root)."""
    yield node.session, depth
    for child in node.children:
        yield from tree_rows(child, depth + 1)
