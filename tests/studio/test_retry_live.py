"""A model call tried again after a failure, seen live: each ``model_retry`` reaches the
viewer as it is stored, and the status says the run is retrying its model until the
call answers. A real run on the real ASGI application, against the in-repo
OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio.asgi import application
from studio.models import Session
from tests.studio.conftest import make_agent, make_session, remote_model
from tests.support.live import run_manager, watch  # noqa: F401  (autouse)
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def model_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


@sync_to_async
def session_on(owner: User, server: OpenAIServer) -> Session:
    """A session of an agent whose model is ``server``."""
    remote_model(owner, server.base_url)
    return make_session(owner, make_agent(owner, "patient", model="remote"))


async def test_the_status_says_the_model_is_retried_until_the_call_answers(
    ada: User, model_server: OpenAIServer
) -> None:
    model_server.fail(503, times=2)
    model_server.reply("Third time lucky.")
    session = await session_on(ada, model_server)
    viewer = await watch(application, session, ada)

    await viewer.send({"type": "user_message", "text": "hello"})
    await viewer.until_ended()

    assert viewer.run_status == "succeeded"
    kinds = [e["type"] for e in viewer.events]
    assert kinds.count("model_retry") == 2
    assert kinds.index("model_retry") < kinds.index("agent_message")
    waited = [s["waiting_for"] for s in viewer.statuses if s["waiting_for"] is not None]
    # While the call was tried again the run said so (one status: sent as it changes);
    # once answered, it waited on its model no more.
    assert waited == ["model", "retry", "model"]
    assert viewer.statuses[-1]["waiting_for"] is None
