"""A Studio run as an A2A task: the run's id is the task's, its session's the context's,
and the task's state follows the run's status."""

from __future__ import annotations

from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from studio.models import RunStatus
from studio.services.a2a_serving import Snapshot

STATES: dict[str, TaskState] = {
    RunStatus.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    RunStatus.RUNNING: TaskState.TASK_STATE_WORKING,
    RunStatus.PAUSED: TaskState.TASK_STATE_WORKING,  # held between steps, then goes on
    RunStatus.WAITING: TaskState.TASK_STATE_INPUT_REQUIRED,  # parked until a person decides
    RunStatus.SUCCEEDED: TaskState.TASK_STATE_COMPLETED,
    RunStatus.DEGRADED: TaskState.TASK_STATE_COMPLETED,
    RunStatus.FAILED: TaskState.TASK_STATE_FAILED,
    RunStatus.INTERRUPTED: TaskState.TASK_STATE_FAILED,
    RunStatus.CANCELLED: TaskState.TASK_STATE_CANCELED,
}
SETTLED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
    }
)
"""States a caller waits for: the run ended, or waits on a person in Studio."""
ANSWER_ARTIFACT = "answer"


def state_of(snap: Snapshot) -> TaskState:
    if snap.waiting:
        return TaskState.TASK_STATE_INPUT_REQUIRED
    return STATES.get(snap.status, TaskState.TASK_STATE_WORKING)


def agent_message(snap: Snapshot, text: str, key: str) -> Message:
    """An agent message of the task; ``key`` makes its id (the same on every reading)."""
    return Message(
        message_id=f"{snap.task_id}:{key}",
        context_id=snap.context_id,
        task_id=snap.task_id,
        role=Role.ROLE_AGENT,
        parts=[Part(text=text)],
    )


def status_of(snap: Snapshot) -> TaskStatus:
    """The task's status; its message says the answer, the failure or the wait."""
    state = state_of(snap)
    status = TaskStatus(state=state)
    text = _status_text(snap, state)
    if text:
        status.message.CopyFrom(agent_message(snap, text, f"status-{snap.status}"))
    return status


def _status_text(snap: Snapshot, state: TaskState) -> str:
    if state == TaskState.TASK_STATE_COMPLETED:
        return snap.answer
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        return "The run waits for a person in Studio (an approval or an answer)."
    if state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED):
        return f"The run {snap.status}: {snap.error or 'no message'}"
    return ""


def task_of(snap: Snapshot, request: Message | None = None) -> Task:
    """The task, with the caller's message and the answer as its history, and the
    answer as its artifact once completed."""
    task = Task(id=snap.task_id, context_id=snap.context_id, status=status_of(snap))
    asked = Message(
        message_id=request.message_id if request is not None else f"{snap.task_id}:request",
        context_id=snap.context_id,
        task_id=snap.task_id,
        role=Role.ROLE_USER,
        parts=[Part(text=snap.request)],
    )
    task.history.append(asked)
    if task.status.HasField("message"):
        task.history.append(task.status.message)
    if state_of(snap) == TaskState.TASK_STATE_COMPLETED:
        task.artifacts.append(answer_artifact(snap))
    return task


def answer_artifact(snap: Snapshot) -> Artifact:
    return Artifact(
        artifact_id=f"{snap.task_id}:{ANSWER_ARTIFACT}",
        name=ANSWER_ARTIFACT,
        parts=[Part(text=snap.answer)],
    )


def update_of(snap: Snapshot, said: tuple[int, str] | None = None) -> TaskStatusUpdateEvent:
    """A status update: the task's current state, with ``said`` (the seq and text of
    what an agent said meanwhile) as its message, else the state's own."""
    status = status_of(snap)
    if said is not None:
        seq, text = said
        status = TaskStatus(
            state=TaskState.TASK_STATE_WORKING, message=agent_message(snap, text, f"event-{seq}")
        )
    return TaskStatusUpdateEvent(task_id=snap.task_id, context_id=snap.context_id, status=status)


def artifact_update_of(snap: Snapshot) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=snap.task_id,
        context_id=snap.context_id,
        artifact=answer_artifact(snap),
        last_chunk=True,
    )
