"""A run on an Anthropic, Gemini or Ollama config: the real integration streams its
answer from an in-repo server speaking the provider's wire format, the usage is stored,
the key never is; and a run on a provider this server lacks fails with that said."""

from __future__ import annotations

import sys

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from studio import services
from studio.models import Event, ModelConfig, Run, RunStatus
from studio.runs.execute import execute_run
from tests.studio.conftest import make_agent, make_session
from tests.support.anthropic_server import AnthropicServer
from tests.support.gemini_server import GeminiServer
from tests.support.ollama_server import OllamaServer
from tests.support.wire_server import WireServer

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "sk-run-SECRET-abcdefghijklmnop"
SERVERS: dict[str, type[WireServer]] = {
    "anthropic": AnthropicServer,
    "gemini": GeminiServer,
    "ollama": OllamaServer,
}


@sync_to_async
def start(owner: User, provider: str, base_url: str) -> Run:
    config = ModelConfig(
        owner=owner, name="remote", provider=provider, model="test-model", base_url=base_url
    )
    config.set_api_key(KEY)
    config.save()
    agent = make_agent(owner, "remote_agent", model="remote")
    return services.start_run(make_session(owner, agent), "hi")


@pytest.mark.parametrize("provider", sorted(SERVERS))
async def test_a_run_streams_the_providers_answer_and_stores_its_usage_not_its_key(
    ada: User, provider: str
) -> None:
    with SERVERS[provider]() as server:
        server.reply("Hello from the provider", usage=(3, 4))
        run = await start(ada, provider, server.base_url)
        finished = await execute_run(run)

    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    payloads = [e.payload async for e in Event.objects.filter(session_id=run.session_id)]
    usages = [e["usage"] for e in payloads if e.get("usage")]
    assert [(u["input_tokens"], u["output_tokens"]) for u in usages] == [(3, 4)]
    assert "Hello from the provider" in repr(payloads)
    assert KEY not in repr(payloads)


async def test_a_run_on_a_provider_this_server_lacks_fails_saying_which_package(
    ada: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_anthropic", None)  # as if not installed
    run = await start(ada, "anthropic", "http://127.0.0.1:9")

    finished = await execute_run(run)

    assert finished.status == RunStatus.FAILED
    assert "pip install langchain-anthropic" in finished.error_message
