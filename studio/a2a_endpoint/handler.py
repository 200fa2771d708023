"""The SDK's ``RequestHandler`` over Studio's runs (``services.a2a_serving``).

The endpoint puts the token's user and the published agent in each call's context
(``CALLER_KEY``); every lookup is scoped to both, so a task of another user or agent is
not found. ``message/send`` starts a run and waits until it settles (ends, or waits on
a person: ``input-required``), at most ``STUDIO_MCP_SERVE_RUN_TIMEOUT_S``, after which
it answers the task as it stands (``tasks/get`` follows it); ``returnImmediately``
answers at once. ``message/stream`` and ``tasks/resubscribe`` send the task, then a
status update for each message the run's own agents say and for each change of state,
until it settles. Both follow the run the same way (``follow.snapshots``: its live
events, read from the database). Push notifications and task listing are not offered.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from studio.a2a_endpoint import follow, tasks
from studio.db import db_sync_to_async
from studio.errors import StudioError
from studio.models import Run
from studio.services import a2a_serving

CALLER_KEY = "studio.a2a_caller"
"""Where the endpoint puts the ``Caller`` in the request's ASGI scope (and the context
builder in the call's state)."""


@dataclass(frozen=True, slots=True)
class Caller:
    user_id: Any
    agent_id: str


def caller_of(context: ServerCallContext) -> Caller:
    caller = context.state.get(CALLER_KEY)
    if not isinstance(caller, Caller):  # the endpoint authenticates first: a wiring bug
        raise PermissionError("no authenticated caller on this request")
    return caller


def text_of(message: Message) -> str:
    """The message's text parts; other parts (files, data) are refused."""
    if not message.parts:
        raise InvalidParamsError("the message has no parts")
    texts: list[str] = []
    for part in message.parts:
        if part.WhichOneof("content") != "text":
            raise InvalidParamsError("this agent takes text parts only")
        texts.append(part.text)
    return "\n".join(texts)


class StudioRequestHandler(RequestHandler):
    """See the module docstring."""

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        run = await _start(caller_of(context), params.message)
        if params.configuration.return_immediately:
            return tasks.task_of(await follow.snapshot(run), params.message)
        snap = None
        async for snap in follow.snapshots(run):  # noqa: B007 (the last one answers)
            pass
        assert snap is not None  # noqa: S101 (snapshots yields at least once)
        return tasks.task_of(snap, params.message)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        run = await _start(caller_of(context), params.message)
        async for event in _events(run, params.message):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        run = await _run_of(caller_of(context), params.id)
        async for event in _events(run):
            yield event

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        run = await _run_of(caller_of(context), params.id)
        return tasks.task_of(await follow.snapshot(run))

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        run = await _run_of(caller_of(context), params.id)
        try:
            await db_sync_to_async(a2a_serving.cancel)(run)
        except StudioError as exc:
            raise TaskNotCancelableError(str(exc)) from None
        return tasks.task_of(await follow.snapshot(run))

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError("listing tasks is not offered: see the sessions in Studio")

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise UnsupportedOperationError("no extended agent card: the public one says it all")


async def _start(caller: Caller, message: Message) -> Run:
    text = text_of(message)
    try:
        return await db_sync_to_async(a2a_serving.send)(
            caller.user_id, caller.agent_id, text, message.context_id
        )
    except LookupError:
        raise InvalidParamsError(f"no context {message.context_id!r} of this agent") from None
    except StudioError as exc:  # a run in progress in that context, the run cap...
        raise InvalidRequestError(str(exc)) from None


async def _run_of(caller: Caller, task_id: str) -> Run:
    run = await db_sync_to_async(a2a_serving.task_run)(caller.user_id, caller.agent_id, task_id)
    if run is None:
        raise TaskNotFoundError
    return run


async def _events(run: Run, request: Message | None = None) -> AsyncGenerator[Event]:
    """The task, then a status update for each thing the run's agents say and for each
    change of state, until it settles (or the wait runs out: the stream ends and the
    caller resubscribes or polls)."""
    state: TaskState | None = None
    async for snap in follow.snapshots(run):
        if state is None:
            yield tasks.task_of(snap, request)
            state = tasks.state_of(snap)
        for said in snap.messages:
            yield tasks.update_of(snap, said)
        if tasks.state_of(snap) != state:
            state = tasks.state_of(snap)
            if state == TaskState.TASK_STATE_COMPLETED:
                yield tasks.artifact_update_of(snap)
            yield tasks.update_of(snap)
