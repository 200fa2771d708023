"""Issue 18's control features through Studio: structured output, hooks and failure
policies set in a spec (API validation at their paths), run over the websocket and the
API, and a ``degraded`` status from the run's end to the session list."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client

from agents_core.llm import LlmResponse
from studio import services
from studio.agents.hooks import RedactHook, RedactSettings
from studio.asgi import application
from studio.models import Run, RunStatus, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import (
    client_for,
    error_paths,
    make_agent,
    make_session,
    post_agent,
    remote_model,
    results,
)
from tests.support.live import (
    latest_run,
    new_session,
    run_manager,  # noqa: F401  (an autouse fixture)
    run_to_end,
    script_model,
    scripted_agent,
    stored,
    watch,
)
from tests.support.openai_server import OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}
CALCULATOR = (
    "Work out arithmetic with the calculator tool.\nResult: The answer is {last_tool_result}."
)


def test_the_api_checks_the_new_spec_fields_at_their_paths(ada: User) -> None:
    make_agent(ada)  # the "scripted" model
    base = {"name": "checked", "model": "scripted"}
    bad_schema = {"type": "object", "properties": {"celsius": {"type": "warm"}}}
    paths = error_paths(post_agent(ada, {**base, "output_schema": bad_schema, "output_key": "w"}))
    assert list(paths) == ["spec.output_schema.properties.celsius.type"]
    paths = error_paths(post_agent(ada, {**base, "output_schema": WEATHER}))
    assert list(paths) == ["spec.output_key"]
    paths = error_paths(post_agent(ada, {**base, "hooks": [{"name": "shout"}]}))
    assert paths["spec.hooks.0.name"].startswith("unknown hook 'shout' (registered: ")
    paths = error_paths(post_agent(ada, {**base, "hooks": [{"name": "tool_guard"}]}))
    assert list(paths) == ["spec.hooks.0.settings.blocked_terms"]
    bad_policy = {**base, "tools": [{"name": "calculator", "on_failure": "shrug"}]}
    assert list(error_paths(post_agent(ada, bad_policy))) == ["spec.tools.0.on_failure"]
    assert list(error_paths(post_agent(ada, {**base, "on_failure": "maybe"}))) == [
        "spec.on_failure"
    ]

    good = {
        **base,
        "output_schema": WEATHER,
        "output_key": "weather",
        "output_retries": 3,
        "hooks": [{"name": "redact", "settings": {"terms": ["secret"]}}],
        "tools": [{"name": "calculator", "on_failure": "degrade"}],
        "on_failure": "continue",
    }
    created = post_agent(ada, good)
    assert created.status_code == 201, created.content
    assert created.json()["spec"] == good
    hooks = client_for(ada).get("/api/hooks/").json()
    assert {h["name"] for h in hooks} == {"redact", "tool_guard", "tool_cache", "fallback_reply"}
    redact = next(h for h in hooks if h["name"] == "redact")
    assert "terms" in redact["settings_schema"]["properties"]


async def test_a_structured_answer_is_re_prompted_then_lands_parsed_in_state(ada: User) -> None:
    await sync_to_async(scripted_agent)(
        ada,
        "forecaster",
        [
            {"text": "Sunny and 21 degrees in Paris."},
            {"text": '```json\n{"city": "Paris", "celsius": 21}\n```'},
        ],
        output_schema=WEATHER,
        output_key="weather",
    )
    session = await new_session(ada, "forecaster")
    viewer = await run_to_end(await watch(application, session, ada), "Weather in Paris?")

    assert viewer.run_status == "succeeded"
    [rejected] = viewer.events_of_type("error")
    assert rejected["error"]["code"] == "output_invalid"
    assert rejected["error"]["failure"] == "non_fatal"
    assert "the answer is not JSON" in rejected["error"]["message"]
    [message] = viewer.events_of_type("agent_message")
    structured = [p for p in message["parts"] if p["kind"] == "structured"]
    assert structured == [{"kind": "structured", "value": {"city": "Paris", "celsius": 21}}]
    assert message["actions"]["state_delta"] == {"weather": {"city": "Paris", "celsius": 21}}
    detail = await sync_to_async(client_for(ada).get)(f"/api/sessions/{session.pk}/")
    assert detail.json()["state"]["weather"] == {"city": "Paris", "celsius": 21}
    assert viewer.events == await stored(session)


async def test_hooks_named_in_a_spec_guard_tools_and_redact_answers(ada: User) -> None:
    script = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
        {"text": "Done. Write to ada@example.com about project orion."},
    ]
    await sync_to_async(scripted_agent)(
        ada,
        "guarded",
        script,
        tools=[{"name": "calculator"}],
        hooks=[
            {"name": "tool_guard", "settings": {"blocked_terms": ["* 7"]}},
            {"name": "redact", "settings": {"terms": ["Project Orion"]}},
        ],
    )
    session = await new_session(ada, "guarded")
    viewer = await run_to_end(await watch(application, session, ada), "six sevens?")

    assert viewer.run_status == "succeeded"
    [response] = viewer.events_of_type("tool_response")
    assert response["parts"][0]["result"].startswith("blocked: the tool_guard hook refused")
    assert response["hooks"] == [
        {"hook": "tool_guard", "stage": "before_tool", "effect": "short_circuited"}
    ]
    final = viewer.events_of_type("agent_message")[-1]
    assert final["parts"][0]["text"] == "Done. Write to [redacted] about [redacted]."
    assert final["hooks"] == [{"hook": "redact", "stage": "after_model", "effect": "rewrote"}]
    # What the hook masks was never streamed nor stored.
    assert viewer.partials == []
    everything = json.dumps(await stored(session))
    assert "ada@example.com" not in everything and "orion" not in everything.lower()


async def test_a_fallback_hook_answers_when_the_model_fails(ada: User) -> None:
    with OpenAIServer(models=["fake-model"]) as server:
        server.fail(400, message="the request was refused")

        @sync_to_async
        def setup() -> Run:
            remote_model(ada, server.base_url)
            hook = {"name": "fallback_reply", "settings": {"text": "The model is away."}}
            agent = make_agent(ada, "resilient", model="remote", hooks=[hook])
            return services.start_run(make_session(ada, agent), "hi")

        finished = await execute_run(await setup())
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    payloads = await stored(await Session.objects.aget(pk=finished.session_id))
    message = next(p for p in payloads if p["type"] == "agent_message")
    assert message["parts"][0]["text"] == "The model is away."
    assert message["hooks"] == [
        {"hook": "fallback_reply", "stage": "on_model_error", "effect": "recovered"}
    ]


def session_list(user: User, query: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(f"/sessions/?{query}").content.decode()


async def test_a_degrading_tool_ends_the_run_degraded_naming_what_failed(ada: User) -> None:
    @sync_to_async
    def setup() -> Session:
        tools = [{"name": "calculator", "on_failure": "degrade"}]
        return make_session(ada, make_agent(ada, "careless", instruction=CALCULATOR, tools=tools))

    session = await setup()
    viewer = await run_to_end(await watch(application, session, ada), "what is 1 / 0?")

    assert viewer.run_status == "degraded"
    [response] = viewer.events_of_type("tool_response")
    assert response["error"]["degraded"] is True
    assert response["parts"][0]["is_error"]
    assert not any(e["type"] == "error" for e in viewer.events)  # no terminal error event
    run = await latest_run(session)
    assert run is not None
    body = (await sync_to_async(client_for(ada).get)(f"/api/runs/{run.pk}/")).json()
    assert body["status"] == "degraded" and body["error_code"] == "degraded"
    assert (
        "tool 'calculator' failed: tool_arguments_invalid: division by zero"
        in body["error_message"]
    )
    listed = await sync_to_async(client_for(ada).get)("/api/runs/?status=degraded")
    assert [r["id"] for r in results(listed.json())] == [str(run.pk)]
    sessions = await sync_to_async(client_for(ada).get)("/api/sessions/?status=degraded")
    assert [s["id"] for s in results(sessions.json())] == [str(session.pk)]
    page = await sync_to_async(session_list)(ada, "status=degraded")
    assert f'data-session="{session.pk}"' in page
    assert '<span class="badge degraded">degraded</span>' in page


async def test_a_failing_tool_with_policy_fail_fails_the_run(ada: User) -> None:
    @sync_to_async
    def setup() -> Session:
        tools = [{"name": "calculator", "on_failure": "fail"}]
        return make_session(ada, make_agent(ada, "strict", instruction=CALCULATOR, tools=tools))

    viewer = await run_to_end(await watch(application, await setup(), ada), "what is 1 / 0?")

    assert viewer.run_status == "failed"
    assert viewer.status is not None
    assert viewer.status["run"]["error_code"] == "tool_arguments_invalid"
    assert viewer.events[-1]["error"]["failure"] == "terminal"


async def test_a_sub_agent_that_degrades_lets_the_pipeline_finish_degraded(ada: User) -> None:
    @sync_to_async
    def setup() -> Session:
        script_model(ada, "broken_model", [])  # no answers: every call fails
        make_agent(ada, "unused")  # the "scripted" model
        spec = {
            "type": "sequential",
            "name": "pipeline",
            "sub_agents": [
                {"name": "first", "model": "broken_model", "on_failure": "degrade"},
                {"name": "second", "model": "scripted", "instruction": "Reply: second done"},
            ],
        }
        agent = services.create_agent(ada, name="pipeline", spec=spec)
        return make_session(ada, agent)

    viewer = await run_to_end(await watch(application, await setup(), ada), "go")

    assert viewer.run_status == "degraded"
    [error] = viewer.events_of_type("error")
    assert (error["author"], error["error"]["failure"], error["error"]["degraded"]) == (
        "first",
        "non_fatal",
        True,
    )
    assert viewer.events_of_type("agent_message")[-1]["parts"][0]["text"] == "second done"
    assert viewer.status is not None
    assert "agent 'first' failed" in viewer.status["run"]["error_message"]


@pytest.mark.parametrize(
    ("thinking", "kept"), [("plain thought", "sig-1"), ("the secret thought", "")]
)
async def test_redacting_thinking_drops_a_signature_that_would_no_longer_match(
    thinking: str, kept: str
) -> None:
    hook = RedactHook(RedactSettings(terms=["secret"]))
    response = LlmResponse(text="ok", thinking=thinking, thinking_signature="sig-1")

    masked = await hook.after_model(None, response)  # type: ignore[arg-type]  # unread

    assert masked.thinking_signature == kept
