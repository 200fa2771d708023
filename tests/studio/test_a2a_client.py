"""The ``a2a`` tool: a Studio agent calls a remote A2A agent, on loopback.

Against the ``a2a-sdk``'s own server (``tests.support.a2a_server``), streaming and not:
the answer reaches the model as the tool's result, the remote's progress is stored as
a nested agent inside the call, the stored token is sent and never stored or shown,
and a failed remote task is an error result. The outbound checks refuse a URL they do
not admit, with a clear error, before any request. And the acceptance: a Studio agent
of one user calls a second user's Studio agent over A2A, both in one real Daphne, and
each session is its owner's only.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from pydantic import ValidationError

from studio import services
from studio.a2a import client as a2a_client
from studio.errors import InvalidInputError
from studio.models import Agent, Event, ModelConfig, RemoteAgent, Run, RunStatus
from studio.runs.execute import execute_run
from tests.e2e.browser import Api
from tests.support import a2a_server
from tests.support.daphne_server import DaphneServer, daphne_server, prepare_data


@pytest.fixture(scope="module")
def streaming_url() -> Iterator[str]:
    with a2a_server.serve(streaming=True) as url:
        yield url


@pytest.fixture(scope="module")
def blocking_url() -> Iterator[str]:
    with a2a_server.serve(streaming=False) as url:
        yield url


def remote(owner: User, url: str, name: str = "echo", token: str = a2a_server.TOKEN) -> RemoteAgent:
    agent = RemoteAgent(owner=owner, name=name, url=url, description="Echoes things.")
    agent.set_token(token)
    agent.save()
    return agent


def call(tool: str, request: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "id": f"call-{tool}", "args": {"request": request}}]}


def caller(owner: User, script: list[dict[str, Any]]) -> Agent:
    ModelConfig.objects.create(
        owner=owner, name="scripted", provider="scripted", options={"script": script, "loop": False}
    )
    tool = {"name": "a2a", "settings": {"servers": ["echo"]}}
    spec = {"name": "caller", "model": "scripted", "instruction": ".", "tools": [tool]}
    return services.create_agent(owner, name="caller", spec=spec)


def run_agent(agent: Agent, text: str = "go") -> Run:
    session = services.start_session(agent.owner, agent)
    return async_to_sync(execute_run)(services.start_run(session, text))


def events(run: Run) -> list[Event]:
    return list(Event.objects.filter(session_id=run.session_id).order_by("seq"))


def tool_results(run: Run) -> list[dict[str, Any]]:
    found = [e for e in events(run) if e.type == "tool_response"]
    return [part for event in found for part in event.payload["parts"]]


@pytest.mark.parametrize("which", ["streaming_url", "blocking_url"])
@pytest.mark.django_db(transaction=True)
def test_an_agent_asks_a_remote_a2a_agent_and_its_progress_is_nested(
    ada: User, which: str, request: pytest.FixtureRequest
) -> None:
    remote(ada, request.getfixturevalue(which))
    a2a_server.SEEN_AUTH.clear()
    agent = caller(ada, [call("a2a_echo", "the weather"), {"text": "done"}])
    run = run_agent(agent)
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    [result] = tool_results(run)
    assert (result["name"], result["result"]) == ("a2a_echo", "echo: the weather")
    assert f"Bearer {a2a_server.TOKEN}" in a2a_server.SEEN_AUTH
    nested = [e for e in events(run) if e.author == "a2a_echo"]
    assert (nested[0].type, nested[-1].type) == ("agent_start", "agent_end")
    said = [e.text for e in nested if e.type == "agent_message"]
    assert "thinking about the weather" in said
    assert all(e.branch.endswith("a2a_echo@call-a2a_echo") for e in nested)
    start, call_event = nested[0], next(e for e in events(run) if e.type == "agent_message")
    assert start.payload["parent_span_id"] in json.dumps(call_event.payload)
    assert a2a_server.TOKEN not in json.dumps([e.payload for e in events(run)])


@pytest.mark.django_db(transaction=True)
def test_a_failed_remote_task_is_an_error_result_that_says_why(
    ada: User, streaming_url: str
) -> None:
    remote(ada, streaming_url)
    run = run_agent(caller(ada, [call("a2a_echo", "please fail"), {"text": "done"}]))
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    [result] = tool_results(run)
    assert result["is_error"] and "failed: cannot do that" in result["result"]


@pytest.mark.django_db(transaction=True)
def test_a_wrong_token_is_an_error_result(ada: User, streaming_url: str) -> None:
    remote(ada, streaming_url, token="not-the-right-token")
    run = run_agent(caller(ada, [call("a2a_echo", "hi"), {"text": "done"}]))
    [result] = tool_results(run)
    assert result["is_error"] and "401" in result["result"]
    assert "not-the-right-token" not in json.dumps([e.payload for e in events(run)])


@pytest.mark.django_db(transaction=True)
def test_the_outbound_check_refuses_a_forbidden_url_before_any_request(
    ada: User, streaming_url: str, settings: Any
) -> None:
    remote(ada, streaming_url)
    agent = caller(ada, [call("a2a_echo", "hi"), {"text": "done"}])
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    a2a_server.SEEN_AUTH.clear()
    run = run_agent(agent)
    [result] = tool_results(run)
    assert result["is_error"]
    assert "refused to call the A2A agent" in result["result"]
    assert "STUDIO_OUTBOUND_ALLOWLIST" in result["result"]
    assert a2a_server.SEEN_AUTH == []  # nothing was sent


@pytest.mark.django_db(transaction=True)
def test_a_card_that_sends_messages_to_a_refused_address_is_not_followed(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    with a2a_server.serve(rpc_url="http://127.0.0.2:9/") as url:
        remote(ada, url)
        run = run_agent(caller(ada, [call("a2a_echo", "hi"), {"text": "done"}]))
    [result] = tool_results(run)
    assert result["is_error"]
    assert "refused to call the A2A agent at http://127.0.0.2:9/" in result["result"]


@pytest.mark.django_db
def test_a_spec_may_name_only_its_owners_servers(ada: User, bob: User) -> None:
    remote(bob, "http://127.0.0.1:9/", name="bobs")
    tool = {"name": "a2a", "settings": {"servers": ["bobs"]}}
    spec = {"name": "x", "model": "m", "instruction": ".", "tools": [tool]}
    ModelConfig.objects.create(owner=ada, name="m", provider="scripted", options={})
    with pytest.raises(InvalidInputError) as refused:
        services.create_agent(ada, name="x", spec=spec)
    assert "no remote agent named bobs" in str(refused.value.problems)
    tool["settings"] = {"servers": ["not a name"]}
    with pytest.raises(InvalidInputError) as refused:
        services.create_agent(ada, name="x", spec=spec)
    assert "'not a name' is not a server name: Use 1" in str(refused.value.problems)


@pytest.mark.django_db
def test_an_owners_settings_class_is_kept_and_reads_their_remote_agents_each_time(
    ada: User,
) -> None:
    settings = a2a_client.settings_model(ada.pk)
    assert a2a_client.settings_model(ada.pk) is settings  # not a new class every run
    with pytest.raises(ValidationError, match="no remote agent named later"):
        settings.model_validate({"servers": ["later"]})
    assert "You have none registered yet." in json.dumps(settings.model_json_schema())

    remote(ada, "http://127.0.0.1:9/", name="later")

    assert settings.model_validate({"servers": ["later"]}).servers == ["later"]
    assert "Yours: later." in json.dumps(settings.model_json_schema())


# The acceptance: a Studio agent calls a second Studio agent over A2A, in one Daphne.

ACCEPTANCE = """
import json
from django.contrib.auth import get_user_model
from studio import services
from studio.a2a import client as a2a_client
from studio.models import ModelConfig, RemoteAgent
from studio.services import a2a_serving
User = get_user_model()
ada = User.objects.create_user("ada", password="ada-password-1")
bob = User.objects.create_user("bob", password="bob-password-1")
ModelConfig.objects.create(owner=bob, name="m", provider="scripted",
    options={{"script": [{{"text": "bob's answer"}}], "loop": True, "latency_s": 1.5}})
helper = services.create_agent(bob, name="helper", description="Answers questions.",
    spec={{"name": "helper", "model": "m", "instruction": "."}})
a2a_serving.set_a2a_published(helper, True)
token = services.create_token(bob, "for ada")[1]
remote = RemoteAgent(owner=ada, name="bobs-helper", url="{base}/a2a/" + str(helper.pk) + "/")
remote.set_token(token)
remote.save()
call = {{"tool_calls": [{{"name": "a2a_bobs-helper", "id": "c1", "args": {{"request": "help"}}}}]}}
ModelConfig.objects.create(owner=ada, name="m", provider="scripted",
    options={{"script": [call, {{"text": "ada is done"}}], "loop": False}})
tool = {{"name": "a2a", "settings": {{"servers": ["bobs-helper"]}}}}
asker = services.create_agent(ada, name="asker",
    spec={{"name": "asker", "model": "m", "instruction": ".", "tools": [tool]}})
print(json.dumps({{"asker": str(asker.pk)}}))
"""
OUTCOME = """
import json
from studio.models import Event, Run, Session
run = Run.objects.filter(session_id="{session}").latest("created_at")
sessions = {{str(s.pk): s.owner.username for s in Session.objects.all()}}
rows = Event.objects.filter(session_id=run.session_id, type="tool_response")
parts = [p for e in rows for p in e.payload["parts"]]
nested = list(Event.objects.filter(session_id=run.session_id, author="a2a_bobs-helper")
    .values_list("type", "text"))
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
cookies = {{}}
for name in ("ada", "bob"):
    browser = Client()
    browser.force_login(get_user_model().objects.get(username=name))
    cookies[name] = browser.cookies[settings.SESSION_COOKIE_NAME].value
print(json.dumps({{"status": run.status, "error": run.error_message, "sessions": sessions,
    "results": parts, "nested": nested, "cookies": cookies}}))
"""


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaphneServer]:
    template = prepare_data(tmp_path_factory.mktemp("a2a-accept") / "data")
    # Bob's agent answers after 1.5 s, past the 0.5 s the server holds a call or a stream
    # for: ada's tool then follows the task with tasks/get until it ends.
    env = {"STUDIO_MCP_SERVE_RUN_TIMEOUT_S": "0.5"}
    with daphne_server(tmp_path_factory.mktemp("a2a-run") / "data", env, template=template) as s:
        yield s


def shell(server: DaphneServer, code: str) -> Any:
    try:
        done = server.manage("shell", "-c", code)
    except subprocess.CalledProcessError as failed:
        pytest.fail(f"the shell failed: {failed.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_studio_agent_calls_another_users_studio_agent_over_a2a(studio: DaphneServer) -> None:
    made = shell(studio, ACCEPTANCE.format(base=studio.url))
    ada = Api(studio.url, ("ada", "ada-password-1"))  # ada starts her run in the server
    started = {"session": ada.post("/api/sessions/", {"agent": made["asker"]})["id"]}
    ada.post(f"/api/sessions/{started['session']}/messages/", {"text": "ask bob"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ada.get(f"/api/sessions/{started['session']}/")["status"] not in (
            "idle",
            "queued",
            "running",
        ):
            break
        time.sleep(0.2)
    outcome = shell(studio, OUTCOME.format(session=started["session"]))
    assert outcome["status"] == "succeeded", outcome
    [result] = outcome["results"]
    assert (result["name"], result["result"]) == ("a2a_bobs-helper", "bob's answer")
    assert [outcome["nested"][0][0], outcome["nested"][-1][0]] == ["agent_start", "agent_end"]
    owners = outcome["sessions"]
    assert owners[started["session"]] == "ada"
    [bobs] = [pk for pk, owner in owners.items() if owner == "bob"]
    assert len(owners) == 2  # bob's agent ran in a session of bob's
    cookies = outcome["cookies"]
    for session, owner, other in ((started["session"], "ada", "bob"), (bobs, "bob", "ada")):
        assert page_status(studio, f"/sessions/{session}/", cookies[owner]) == 200
        assert page_status(studio, f"/sessions/{session}/", cookies[other]) == 404


def page_status(server: DaphneServer, path: str, cookie: str) -> int:
    request = urllib.request.Request(server.url + path, headers={"Cookie": f"sessionid={cookie}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
