""" "Add this turn to a dataset": a case made from one ended run of a session.

The case's input is the run's user message alone (one turn), starting from the session
state as it was before the run (the state deltas of the events before it, replayed);
its expectation is prefilled from what the run did (``agents_core.evals.outcome``): its
final answer, every tool call it made with their arguments, and the state it left. The
user edits it afterwards if it was wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from agents_core import specs as core_specs
from agents_core.evals.contracts import CASE_NAME_MAX, TEXT_MAX, Case
from agents_core.evals.outcome import expectation_from_outcome, outcome_from_events
from agents_core.sessions.base import apply_state_delta
from studio.diffs.reads import run_events
from studio.errors import ConflictError, InvalidInputError, Problem
from studio.models import ACTIVE_RUN_STATUSES, Dataset, DatasetVersion, Event, Run, Session
from studio.services import datasets

MAX_RUN_EVENTS = 5_000
_WORDS = re.compile(r"[A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class AddedCase:
    dataset: Dataset
    version: DatasetVersion
    case: Case
    created: bool
    """Whether the dataset was made for it."""


def add_turn_to_dataset(
    owner: AbstractBaseUser,
    session: Session,
    *,
    dataset: str,
    run: Run | None = None,
    name: str | None = None,
) -> AddedCase:
    """``run`` (the session's last ended run when not given) as a new case of
    ``owner``'s dataset ``dataset`` (an id or a name; a new name creates it)."""
    turn = run or last_ended_run(session)
    if turn is None:
        raise ConflictError("this session has no ended run yet", code="no_ended_run")
    if turn.status in ACTIVE_RUN_STATUSES:
        raise ConflictError("the run has not ended yet", code="run_active")
    with transaction.atomic():
        target, created = _dataset(owner, dataset)
        taken = {case.name for case in datasets.current_cases(target)}
        case = case_from_run(turn, name=name or _free_name(_slug(turn_message(turn)), taken))
        version = datasets.add_case(target, case, note=f"added {case.name} from a session")
    return AddedCase(target, version, case, created)


def last_ended_run(session: Session) -> Run | None:
    ended = Run.objects.filter(session=session).exclude(status__in=ACTIVE_RUN_STATUSES)
    return ended.order_by("-created_at").first()


def case_from_run(run: Run, *, name: str) -> Case:
    """The case ``run`` makes: its message from its starting state, expecting what it did."""
    message = turn_message(run)
    if not message:
        raise ConflictError("the run has no user message to replay", code="no_user_message")
    events = run_events(run, limit=MAX_RUN_EVENTS)
    before = state_before(run)
    after = dict(before)
    for event in events:
        apply_state_delta(after, dict(event.actions.state_delta))
    outcome = outcome_from_events(
        events,
        state=_kept(after),
        cost=run.cost if run.cost_complete else None,
        tokens=run.input_tokens + run.output_tokens,
        latency_s=_latency_s(run),
        error=f"{run.error_code}: {run.error_message}" if run.error_code else None,
    )
    return datasets.parse_case(
        {
            "name": name[:CASE_NAME_MAX],
            "input": {"turns": [message[:TEXT_MAX]], "state": before},
            "expect": expectation_from_outcome(outcome).model_dump(mode="json"),
        }
    )


def _latency_s(run: Run) -> float:
    if run.ended_at is None:
        return 0.0
    return max(0.0, (run.ended_at - run.created_at).total_seconds())


def _kept(state: dict[str, Any]) -> dict[str, Any]:
    """State as a session keeps it: ``temp:`` keys live for one turn only."""
    return {key: value for key, value in state.items() if not key.startswith("temp:")}


def turn_message(run: Run) -> str:
    """The user's message of the turn: a resumed run goes on from its first run's."""
    at: Run | None = run
    seen: set[UUID] = set()
    while at is not None and at.pk not in seen:
        if at.message:
            return at.message
        seen.add(at.pk)
        at = at.resumed_from
    return ""


def state_before(run: Run) -> dict[str, Any]:
    """The session state as the run found it: every state delta stored before it."""
    first = run
    while first.resumed_from is not None and first.resumed_from.pk != first.pk:
        first = first.resumed_from
    state: dict[str, Any] = {}
    rows = Event.objects.filter(session_id=run.session_id, seq__lte=first.start_seq or 0)
    for payload in rows.order_by("seq").values_list("payload", flat=True).iterator():
        delta = (payload.get("actions") or {}).get("state_delta") or {}
        apply_state_delta(state, delta)
    return _kept(state)


def _dataset(owner: AbstractBaseUser, ref: str) -> tuple[Dataset, bool]:
    owned = Dataset.objects.filter(owner_id=owner.pk)
    try:
        by_id = owned.filter(pk=UUID(ref)).first()
    except ValueError:
        by_id = None
    if by_id is not None:
        return by_id, False
    found = owned.filter(name=ref).first()
    if found is not None:
        return found, False
    if not re.match(core_specs.NAME_PATTERN, ref):
        message = f"no dataset of yours has this id or name (a new name: {core_specs.NAME_RULE})"
        raise InvalidInputError("dataset", [Problem((), "does_not_exist", message)])
    return datasets.create_dataset(owner, ref, note="created from a session"), True


def _slug(text: str) -> str:
    words = _WORDS.findall(text.lower())[:8]
    return "-".join(words)[:60] or "turn"


def _free_name(stem: str, taken: set[str]) -> str:
    if stem not in taken:
        return stem
    number = 2
    while f"{stem}-{number}" in taken:
        number += 1
    return f"{stem}-{number}"
