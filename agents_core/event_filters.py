"""Pure functions deciding which stored events an agent's model sees."""

from __future__ import annotations

from collections.abc import Sequence

from agents_core.events import Event, EventType

_CONVERSATION = frozenset(
    {EventType.USER_MESSAGE, EventType.AGENT_MESSAGE, EventType.TOOL_RESPONSE, EventType.COMPACTION}
)


def is_visible_to_branch(event: Event, branch: str | None) -> bool:
    """An agent sees the events on its own line of the tree: its own branch, its
    ancestors' and its descendants'. Parallel siblings never see each other.

    User events (no branch) are visible everywhere, and everything is visible when
    ``branch`` is ``None``.
    """
    if branch is None or event.branch is None or event.branch == branch:
        return True
    return branch.startswith(event.branch + ".") or event.branch.startswith(branch + ".")


def should_include_event(event: Event, branch: str | None = None) -> bool:
    """Whether ``event`` belongs in the model history of an agent at ``branch``.

    Excluded: partial chunks, errors, lifecycle events and messages with nothing in them.
    """
    if event.partial or event.type not in _CONVERSATION or not event.parts:
        return False
    if event.type is EventType.AGENT_MESSAGE and not (event.text or event.tool_calls):
        return False
    return is_visible_to_branch(event, branch)


def apply_compaction(events: Sequence[Event]) -> list[Event]:
    """``events`` with each compaction's covered range replaced by its summary event.

    The summary takes the place of the first event it covers; a later compaction may
    cover an earlier one. Events must be in seq order, as sessions keep them. A summary
    none of whose covered events are present (a session loaded from its newest
    compaction on) comes first.
    """
    ranges = [
        (e.actions.compaction.start_seq, e.actions.compaction.end_seq, e)
        for e in events
        if e.type is EventType.COMPACTION and e.actions.compaction is not None
    ]
    if not ranges:
        return list(events)
    effective = [
        (start, end, summary)
        for start, end, summary in ranges
        if not any(s2 <= start and end <= e2 and other is not summary for s2, e2, other in ranges)
    ]
    out: list[Event] = []
    placed: set[str] = set()
    for event in events:
        if event.type is EventType.COMPACTION:
            continue
        cover = next((r for r in effective if event.seq and r[0] <= event.seq <= r[1]), None)
        if cover is None:
            out.append(event)
        elif cover[2].id not in placed:
            placed.add(cover[2].id)
            out.append(cover[2])
    leading = [summary for _, _, summary in effective if summary.id not in placed]
    return [*leading, *out]
