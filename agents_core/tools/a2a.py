"""``A2aAgentTool``: a remote agent, reached over the Agent2Agent (A2A) protocol with
the ``a2a-sdk`` client, called like a tool::

    remote = A2aRemote(url="https://agents.example/a2a/xyz/", headers={...})
    tool = A2aAgentTool(remote, name="ask_billing", description="Billing questions.")

Each call fetches the remote's agent card, sends the model's request as a message
(streamed when the card says the agent streams, else sent and then followed with
``tasks/get``) and answers the task's final text. The remote's progress shows in the
run as the events of a nested agent named like the tool, on a branch of the call
inside the call's span (``agents_core.tools.nested``, as an agent tool's): what
the remote says as it works, its answer, and its end. A task that fails, is
cancelled or rejected, or asks for input the tool cannot give, is an error result
that says so.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError
from pydantic import BaseModel, ConfigDict, Field

from agents_core.context import Context
from agents_core.events import EventType, TextPart
from agents_core.exceptions import ToolExecutionError
from agents_core.tools import nested
from agents_core.tools.base import BaseTool, ToolContext

_POLL_S = 0.5
_DONE = frozenset({TaskState.TASK_STATE_COMPLETED})
_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "was cancelled",
    TaskState.TASK_STATE_REJECTED: "was rejected",
    TaskState.TASK_STATE_INPUT_REQUIRED: "asks for input this tool cannot give",
    TaskState.TASK_STATE_AUTH_REQUIRED: "asks for authentication this tool cannot give",
}


class A2aRemote(BaseModel):
    """Where a remote A2A agent is and how to sign in to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = Field(pattern=r"^https?://")
    """The agent's base URL: its card is at ``<url>/.well-known/agent-card.json``."""
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    """Sent with every request, e.g. ``Authorization``; never shown in messages."""
    timeout_s: float = Field(300.0, gt=0)
    """How long a call waits for the remote's task to end."""
    connect_timeout_s: float = Field(30.0, gt=0)

    def describe(self) -> str:
        return f"A2A agent at {self.url}"


UrlCheck = Callable[[str], None]
"""Raises ``ToolExecutionError`` for a URL the caller will not send requests to (may
block: it runs in a worker thread)."""


class A2aAgentTool(BaseTool):
    """See the module docstring.

    Args:
        remote: Where the agent is.
        name: The tool's name, and the nested agent's in the run's events.
        description: What the model reads about the agent.
        http_transport: Builds the transport of each call's HTTP client (say, one that
            connects only to admitted addresses); ``None`` uses httpx's own.
        url_check: Called with the agent's URL, and with the URL its card says to send
            messages to, before any request goes there.
        redact: Applied to every text the remote sends before the run sees it (its
            progress, its answer, its errors): say, to remove the secrets sent to it.
    """

    side_effects = True

    def __init__(
        self,
        remote: A2aRemote,
        *,
        name: str,
        description: str,
        http_transport: Callable[[], httpx.AsyncBaseTransport] | None = None,
        url_check: UrlCheck | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.remote = remote
        self.name = name
        self.description = description or f"Ask the remote agent {name} (A2A)."
        self.timeout_s = remote.timeout_s + remote.connect_timeout_s
        self.http_transport = http_transport
        self.url_check = url_check
        self.redact = redact or _same

    def parameters_schema(self) -> dict[str, Any]:
        return dict(nested.REQUEST_SCHEMA)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        request = nested.request_of(args)
        await self._check(self.remote.url)
        ctx = nested.sub_run_context(tool_context, self.name, request)
        ctx = ctx.for_agent(self.name, user_input=request)
        start = ctx.event(
            EventType.AGENT_START, span_id=ctx.span_id, parent_span_id=ctx.parent_span_id
        )
        await tool_context.emit(start)
        try:
            return self.redact(await self._ask(request, ctx, tool_context))
        except ToolExecutionError as exc:
            exc.message = self.redact(exc.message)
            exc.args = (exc.message,)
            raise
        finally:
            await tool_context.emit(
                ctx.event(
                    EventType.AGENT_END,
                    span_id=ctx.span_id,
                    parent_span_id=ctx.parent_span_id,
                    started_at=start.created_at,
                )
            )

    async def _check(self, url: str) -> None:
        if self.url_check is not None:
            await asyncio.to_thread(self.url_check, url)

    async def _ask(self, request: str, ctx: Context, tool_context: ToolContext) -> str:
        transport = self.http_transport() if self.http_transport is not None else None
        timeout = httpx.Timeout(self.remote.connect_timeout_s, read=self.remote.timeout_s)
        progress = _Progress(self, ctx, tool_context)
        try:
            async with httpx.AsyncClient(
                headers=self.remote.headers,
                timeout=timeout,
                transport=transport,
                trust_env=transport is None,
                follow_redirects=False,
            ) as http:
                async with asyncio.timeout(self.remote.connect_timeout_s):
                    card = await A2ACardResolver(http, self.remote.url).get_agent_card()
                for interface in card.supported_interfaces:
                    await self._check(interface.url)
                client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
                async with asyncio.timeout(self.remote.timeout_s):
                    async for response in client.send_message(_message(request)):
                        await progress.take(response)
                    await progress.follow(client)
        except TimeoutError:
            raise ToolExecutionError(
                f"{self.remote.describe()} gave no answer within {self.remote.timeout_s}s"
            ) from None
        except (A2AClientError, A2AError, httpx.HTTPError, ValueError) as exc:
            raise ToolExecutionError(f"{self.remote.describe()}: {_reason(exc)}") from exc
        return progress.answer()


def _message(text: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    )


def _text(parts: Any) -> str:
    return "\n".join(part.text for part in parts if part.WhichOneof("content") == "text")


class _Progress:
    """What a call has heard of its task: its state, the texts already shown, and the
    answer (the task's artifacts, or its last agent message)."""

    def __init__(self, tool: A2aAgentTool, ctx: Context, tool_context: ToolContext) -> None:
        self.tool, self.ctx, self.tool_context = tool, ctx, tool_context
        self.task_id = ""
        self.state: TaskState = TaskState.TASK_STATE_SUBMITTED
        self.shown: set[str] = set()
        self.last_said = ""
        self.artifacts: dict[str, str] = {}
        self.replied = False  # the agent answered with a message, not a task

    async def take(self, response: StreamResponse) -> None:
        kind = response.WhichOneof("payload")
        if kind == "task":
            await self._task(response.task)
        elif kind == "message":
            self.replied = True
            await self._said(response.message)
        elif kind == "status_update":
            self.state = response.status_update.status.state
            if response.status_update.status.HasField("message"):
                await self._said(response.status_update.status.message)
        elif kind == "artifact_update":
            artifact = response.artifact_update.artifact
            before = self.artifacts.get(artifact.artifact_id, "")
            text = _text(artifact.parts)
            joined = before + text if response.artifact_update.append else text
            self.artifacts[artifact.artifact_id] = joined

    async def _task(self, task: Task) -> None:
        self.task_id, self.state = task.id, task.status.state
        for artifact in task.artifacts:
            self.artifacts[artifact.artifact_id] = _text(artifact.parts)
        for message in task.history:  # what it said meanwhile, when not streamed
            if message.role == Role.ROLE_AGENT:
                await self._said(message)
        if task.status.HasField("message"):
            await self._said(task.status.message)

    async def _said(self, message: Message) -> None:
        text = self.tool.redact(_text(message.parts))
        if not text or message.message_id in self.shown or text == self.last_said:
            return
        self.shown.add(message.message_id)
        self.last_said = text
        event = self.ctx.event(EventType.AGENT_MESSAGE, parts=[TextPart(text=text)])
        await self.tool_context.emit(event)

    async def follow(self, client: Client) -> None:
        """Poll a task the answer left unsettled (a server that answers at once)."""
        while not self.replied and self.task_id and self._unsettled():
            await asyncio.sleep(_POLL_S)
            await self._task(await client.get_task(GetTaskRequest(id=self.task_id)))

    def _unsettled(self) -> bool:
        return self.state not in _DONE and self.state not in _FAILED

    def answer(self) -> str:
        if self.state in _FAILED and not self.replied:
            why = f": {self.last_said}" if self.last_said else ""
            raise ToolExecutionError(
                f"the task of {self.tool.remote.describe()} {_FAILED[self.state]}{why}"
            )
        return "\n".join(t for t in self.artifacts.values() if t) or self.last_said


def _same(text: str) -> str:
    return text


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:500]
