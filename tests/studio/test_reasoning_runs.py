"""Reasoning controls on model configs: an Anthropic thinking budget reaches the
provider and its streamed thinking is stored with the answer, folded apart from it;
a budget the Messages API would refuse is refused when the config is saved."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from studio import services
from studio.models import Event, ModelConfig, Run, RunStatus
from studio.runs.execute import execute_run
from tests.studio.conftest import error_paths, make_agent, make_session
from tests.support.anthropic_server import AnthropicServer

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def _start(owner: User, base_url: str) -> Run:
    config = ModelConfig(
        owner=owner,
        name="thinker",
        provider="anthropic",
        model="claude-test",
        base_url=base_url,
        options={"max_tokens": 4096, "thinking_budget": 2048},
    )
    config.set_api_key("sk-ant-thinking-abcdef")
    config.save()
    return services.start_run(make_session(owner, make_agent(owner, "deep", model="thinker")), "?")


async def test_a_thinking_budget_is_sent_and_the_thinking_stored_apart_from_the_answer(
    ada: User,
) -> None:
    with AnthropicServer() as server:
        server.reply("Forty-two.", thinking="Six times seven is forty-two.")
        run = await _start(ada, server.base_url)
        finished = await execute_run(run)

    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    assert server.requests[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    answer = await Event.objects.filter(session_id=run.session_id, type="agent_message").aget()
    # Kept, so the next request of a tool-use turn can send the signed thinking back.
    assert answer.payload["parts"][0].pop("signature").startswith("sig-")
    assert answer.payload["parts"] == [
        {"kind": "thinking", "text": "Six times seven is forty-two."},
        {"kind": "text", "text": "Forty-two."},
    ]
    assert answer.text == "Forty-two."


@pytest.mark.parametrize(
    "options",
    [{"max_tokens": 2048, "thinking_budget": 2048}, {"thinking_budget": 100}],
    ids=["not-below-max-tokens", "below-minimum"],
)
def test_a_thinking_budget_the_api_would_refuse_is_refused_on_save(
    api: APIClient, options: dict[str, int]
) -> None:
    response = api.post(
        "/api/models/",
        {"name": "t", "provider": "anthropic", "model": "claude-test", "options": options},
        format="json",
    )

    assert any(path.startswith("options") for path in error_paths(response))
