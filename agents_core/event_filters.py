"""Pure functions deciding which stored events an agent's model sees."""

from __future__ import annotations

from agents_core.events import Event, EventType

_CONVERSATION = frozenset(
    {EventType.USER_MESSAGE, EventType.AGENT_MESSAGE, EventType.TOOL_RESPONSE}
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
