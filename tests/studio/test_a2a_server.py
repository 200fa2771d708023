"""Studio's agents as A2A servers, end to end: the ``a2a-sdk``'s own client against a
real Daphne on loopback fetches a published agent's card, sends (blocking and
streamed), gets and cancels tasks; each task is a run of the owner's, a context is a
session the owner (and nobody else) sees, and a follow-up in it goes on there. Bad or
missing tokens get 401; another user's or an unpublished agent is not found."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotCancelableError, TaskNotFoundError

from tests.support.daphne_server import DaphneServer, daphne_server, prepare_data

SETUP = """
import json
from django.contrib.auth import get_user_model
from studio import services
from studio.models import ModelConfig
from studio.services import a2a_serving
out = {}
for name in ("ada", "bob"):
    user = get_user_model().objects.create_user(name, password=f"{name}-password-1")
    script = {"script": [{"text": f"{name} says <b>hi</b>"}], "loop": True}
    ModelConfig.objects.create(owner=user, name="m", provider="scripted", options=script)
    slow = {"script": [{"text": "late"}], "loop": True, "latency_s": 8}
    ModelConfig.objects.create(owner=user, name="slow", provider="scripted", options=slow)
    tools = [{"name": "calculator"}]
    spec = {"name": f"{name}-agent", "model": "m", "instruction": ".", "tools": tools}
    about = f"{name}'s helper"
    agent = services.create_agent(user, name=f"{name}-agent", spec=spec, description=about)
    a2a_serving.set_a2a_published(agent, True)
    slow_spec = {"name": "sleepy", "model": "slow", "instruction": "."}
    sleepy = services.create_agent(user, name="sleepy", spec=slow_spec)
    a2a_serving.set_a2a_published(sleepy, True)
    ask = {"tool_calls": [{"name": "ask_user", "args": {"question": "Which city?"}}]}
    asking = {"script": [ask, {"text": "thanks"}], "loop": False}
    ModelConfig.objects.create(owner=user, name="asking", provider="scripted", options=asking)
    asker_spec = {"name": "asker", "model": "asking", "instruction": ".",
                  "tools": [{"name": "ask_user"}]}
    asker = services.create_agent(user, name="asker", spec=asker_spec)
    a2a_serving.set_a2a_published(asker, True)
    hidden_spec = {"name": "hidden", "model": "m", "instruction": "."}
    hidden = services.create_agent(user, name="hidden", spec=hidden_spec)
    out[name] = {
        "agent": str(agent.pk), "sleepy": str(sleepy.pk), "hidden": str(hidden.pk),
        "asker": str(asker.pk),
        "token": services.create_token(user, "a2a")[1],
    }
print(json.dumps(out))
"""
SESSIONS = """
import json
from studio.models import Session
rows = Session.objects.filter(pk__in={ids!r}).values_list("pk", "owner__username")
print(json.dumps({{str(pk): owner for pk, owner in rows}}))
"""


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_data(tmp_path_factory.mktemp("a2a") / "data")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, template: Path) -> Iterator[DaphneServer]:
    # How a call follows its run (the live group) is tests/studio/test_a2a_follow.py's.
    with daphne_server(tmp_path_factory.mktemp("a2a-run") / "data", template=template) as s:
        yield s


@pytest.fixture(scope="module")
def users(server: DaphneServer) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = json.loads(
        server.manage("shell", "-c", SETUP).stdout.strip().splitlines()[-1]
    )
    return found


def agent_url(server: DaphneServer, agent_id: str) -> str:
    return f"{server.url}/a2a/{agent_id}/"


def get(url: str, token: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def message(text: str, context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id,
        )
    )


async def _with_client(url: str, token: str, streaming: bool, call: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)
        return await call(client, card)


def with_client(url: str, token: str, call: Any, *, streaming: bool = False) -> Any:
    return asyncio.run(_with_client(url, token, streaming, call))


async def collect(client: Any, request: SendMessageRequest) -> list[StreamResponse]:
    return [event async for event in client.send_message(request)]


def owners_of(server: DaphneServer, session_ids: list[str]) -> dict[str, str]:
    out = server.manage("shell", "-c", SESSIONS.format(ids=session_ids)).stdout
    found: dict[str, str] = json.loads(out.strip().splitlines()[-1])
    return found


def test_the_card_names_the_agent_its_tools_and_the_bearer_scheme(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    ada = users["ada"]

    async def card_of(client: Any, card: AgentCard) -> AgentCard:
        return card

    card = with_client(agent_url(server, ada["agent"]), ada["token"], card_of)
    assert card.name == "ada-agent" and card.description == "ada's helper"
    assert card.capabilities.streaming
    assert card.supported_interfaces[0].url == agent_url(server, ada["agent"])
    assert {skill.name for skill in card.skills} == {"ada-agent", "calculator"}
    scheme = card.security_schemes["studio_token"].http_auth_security_scheme
    assert scheme.scheme == "Bearer"
    assert "studio_token" in card.security_requirements[0].schemes


@pytest.mark.parametrize("token", [None, "smcp_wrong", "Token nonsense"])
def test_no_valid_token_is_401_for_the_card_and_the_rpc(
    server: DaphneServer, users: dict[str, dict[str, str]], token: str | None
) -> None:
    url = agent_url(server, users["ada"]["agent"])
    status, body = get(url + ".well-known/agent-card.json", token)
    assert status == 401 and body["error"] == "invalid_token"
    with pytest.raises(A2AClientError):
        asyncio.run(_with_client(url, token or "", False, None))


def test_another_users_and_unpublished_agents_are_not_found(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    ada, bob = users["ada"], users["bob"]
    for agent_id in (bob["agent"], ada["hidden"], str(uuid.uuid4())):
        status, body = get(
            agent_url(server, agent_id) + ".well-known/agent-card.json", ada["token"]
        )
        assert (status, body["error"]) == (404, "not_found")
    assert get(f"{server.url}/a2a/nonsense/", ada["token"])[0] == 404


def test_send_runs_a_session_of_the_owner_and_a_follow_up_goes_on_in_it(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    ada = users["ada"]

    async def twice(client: Any, card: AgentCard) -> tuple[Any, Any, Any]:
        first = (await collect(client, message("hello")))[-1].task
        again = (await collect(client, message("and again", first.context_id)))[-1].task
        got = await client.get_task(GetTaskRequest(id=first.id))
        return first, again, got

    first, again, got = with_client(agent_url(server, ada["agent"]), ada["token"], twice)
    assert first.status.state == TaskState.TASK_STATE_COMPLETED
    assert first.artifacts[0].parts[0].text == "ada says <b>hi</b>"
    assert first.history[0].parts[0].text == "hello"
    assert again.context_id == first.context_id and again.id != first.id
    assert again.status.state == TaskState.TASK_STATE_COMPLETED
    assert got.id == first.id and got.status.state == TaskState.TASK_STATE_COMPLETED
    assert owners_of(server, [first.context_id]) == {first.context_id: "ada"}


def test_a_context_of_another_user_is_refused(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    ada, bob = users["ada"], users["bob"]

    async def once(client: Any, card: AgentCard) -> Any:
        return (await collect(client, message("mine")))[-1].task

    bobs = with_client(agent_url(server, bob["agent"]), bob["token"], once)

    async def intrude(client: Any, card: AgentCard) -> None:
        await collect(client, message("let me in", bobs.context_id))

    with pytest.raises(A2AError, match="no context"):
        with_client(agent_url(server, ada["agent"]), ada["token"], intrude)

    async def peek(client: Any, card: AgentCard) -> None:
        await client.get_task(GetTaskRequest(id=bobs.id))

    with pytest.raises(TaskNotFoundError):
        with_client(agent_url(server, ada["agent"]), ada["token"], peek)
    assert owners_of(server, [bobs.context_id]) == {bobs.context_id: "bob"}


def test_stream_sends_the_task_its_progress_and_the_answer(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    bob = users["bob"]

    async def stream(client: Any, card: AgentCard) -> list[StreamResponse]:
        return await collect(client, message("stream it"))

    events = with_client(agent_url(server, bob["agent"]), bob["token"], stream, streaming=True)
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task" and events[0].task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    assert "artifact_update" in kinds
    said = [
        e.status_update.status.message.parts[0].text
        for e in events
        if kinds
        and e.WhichOneof("payload") == "status_update"
        and e.status_update.status.message.parts
    ]
    assert "bob says <b>hi</b>" in said
    last = events[-1].status_update.status
    assert last.state == TaskState.TASK_STATE_COMPLETED


def test_cancel_ends_a_running_task_as_canceled(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    ada = users["ada"]

    async def start_and_cancel(client: Any, card: AgentCard) -> tuple[Any, Any, Any]:
        request = message("take your time")
        request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        started = (await collect(client, request))[-1].task
        cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
        for _ in range(100):
            got = await client.get_task(GetTaskRequest(id=started.id))
            if got.status.state == TaskState.TASK_STATE_CANCELED:
                break
            await asyncio.sleep(0.1)
        return started, cancelled, got

    started, cancelled, got = with_client(
        agent_url(server, ada["sleepy"]), ada["token"], start_and_cancel
    )
    assert started.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
    assert cancelled.id == started.id
    assert got.status.state == TaskState.TASK_STATE_CANCELED

    async def cancel_again(client: Any, card: AgentCard) -> None:
        await client.cancel_task(CancelTaskRequest(id=started.id))

    with pytest.raises(TaskNotCancelableError, match="already"):
        with_client(agent_url(server, ada["sleepy"]), ada["token"], cancel_again)


def test_a_run_waiting_on_a_person_is_input_required(
    server: DaphneServer, users: dict[str, dict[str, str]]
) -> None:
    bob = users["bob"]

    async def ask(client: Any, card: AgentCard) -> Any:
        return (await collect(client, message("book me a trip")))[-1].task

    task = with_client(agent_url(server, bob["asker"]), bob["token"], ask)
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "waits for a person in Studio" in task.status.message.parts[0].text
