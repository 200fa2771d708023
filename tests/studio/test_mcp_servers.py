"""MCP servers through the API and in runs: owner scoping, URL checks at registration
and before each connection, redirects, write-only secrets, and agents calling the tools
of a real MCP server (tests/support/mcp_server.py) over streamable HTTP."""

from __future__ import annotations

import io
import json
import logging
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from cryptography.fernet import Fernet
from django.contrib.auth.models import User
from django.core.management import call_command
from rest_framework.test import APIClient

from studio import security, services
from studio.api.mcp import McpServerSerializer
from studio.models import Agent, Event, McpServer, ModelConfig, Run, RunStatus
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for, results
from tests.support.mcp_server import serve_http

CANARY = "mcp-header-CANARY-7f3a9c2e5b1d"
URL = "/api/mcp-servers/"


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


def register(client: APIClient, **body: Any) -> Any:
    return client.post(URL, body, format="json")


def http_server(owner: User, url: str, name: str = "tests", **headers: str) -> McpServer:
    server = McpServer(owner=owner, name=name, transport="http", url=url)
    server.set_headers(headers)
    server.save()
    return server


# Registering, reading, owner scoping


@pytest.mark.django_db
def test_header_values_are_stored_encrypted_and_never_returned(
    api: APIClient, mcp_url: str
) -> None:
    created = register(
        api, name="docs", transport="http", url=mcp_url, headers={"Authorization": CANARY}
    )
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["header_names"] == ["Authorization"]
    assert "headers" not in body
    server = McpServer.objects.get(pk=body["id"])
    assert CANARY not in server.headers_ciphertext
    assert server.headers() == {"Authorization": CANARY}
    for response in (api.get(URL), api.get(f"{URL}{server.pk}/"), api.options(URL)):
        assert CANARY not in response.content.decode()


@pytest.mark.django_db
def test_omitted_headers_are_kept_and_an_empty_object_removes_them(
    api: APIClient, mcp_url: str
) -> None:
    server_id = register(
        api, name="docs", transport="http", url=mcp_url, headers={"X-Key": CANARY}
    ).json()["id"]
    renamed = api.patch(f"{URL}{server_id}/", {"description": "Docs"}, format="json")
    assert renamed.json()["header_names"] == ["X-Key"]
    assert McpServer.objects.get(pk=server_id).headers() == {"X-Key": CANARY}
    cleared = api.patch(f"{URL}{server_id}/", {"headers": {}}, format="json")
    assert cleared.json()["header_names"] == []
    assert McpServer.objects.get(pk=server_id).headers_ciphertext == ""


@pytest.mark.django_db
def test_users_see_and_touch_only_their_own_servers(
    api: APIClient, ada: User, bob: User, mcp_url: str
) -> None:
    ours = http_server(ada, mcp_url)
    theirs = http_server(bob, mcp_url, name="bobs")
    assert [s["name"] for s in results(api.get(URL).json())] == ["tests"]
    for method in ("get", "patch", "delete"):
        assert getattr(api, method)(f"{URL}{theirs.pk}/", {}, format="json").status_code == 404
    assert api.post(f"{URL}{theirs.pk}/test/").status_code == 404
    assert McpServer.objects.filter(pk=theirs.pk, name="bobs").exists()
    assert client_for(None).get(URL).status_code == 401
    assert api.get(f"{URL}{ours.pk}/").status_code == 200


@pytest.mark.django_db
def test_names_are_unique_per_owner_only(api: APIClient, bob: User, mcp_url: str) -> None:
    assert register(api, name="docs", transport="http", url=mcp_url).status_code == 201
    again = register(api, name="docs", transport="http", url=mcp_url)
    assert again.status_code == 400
    assert again.json()["errors"][0] == {
        "path": "name",
        "code": "unique",
        "detail": "you already have an MCP server named 'docs'",
    }
    assert register(client_for(bob), name="docs", transport="http", url=mcp_url).status_code == 201


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"transport": "http"}, "url"),
        ({"transport": "http", "url": "http://127.0.0.1:9/mcp", "command": "/bin/sh"}, "command"),
        ({"transport": "http", "url": "ftp://127.0.0.1/mcp"}, "url"),
        ({"transport": "http", "url": "http://127.0.0.1:9/", "headers": {"Host": "x"}}, "headers"),
        ({"transport": "http", "url": "http://127.0.0.1:9/", "headers": {"a b": "x"}}, "headers"),
        (
            {"transport": "http", "url": "http://127.0.0.1:9/", "headers": {"X": "a\r\nB: c"}},
            "headers",
        ),
        ({"transport": "smtp", "url": "http://127.0.0.1:9/"}, "transport"),
        ({"name": "no spaces", "transport": "http", "url": "http://127.0.0.1:9/"}, "name"),
    ],
)
@pytest.mark.django_db
def test_invalid_registrations_name_the_field(
    api: APIClient, body: dict[str, Any], path: str
) -> None:
    response = register(api, **{"name": "srv", **body})
    assert response.status_code == 400, response.json()
    assert response.json()["code"] == "invalid"
    assert response.json()["errors"][0]["path"].split(".")[0] == path
    assert not McpServer.objects.exists()


@pytest.mark.django_db
def test_the_transport_cannot_be_changed(api: APIClient, mcp_url: str) -> None:
    server_id = register(api, name="docs", transport="http", url=mcp_url).json()["id"]
    response = api.patch(
        f"{URL}{server_id}/", {"transport": "stdio", "command": "/bin/true"}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (409, "transport_immutable")
    command = api.patch(f"{URL}{server_id}/", {"command": "/bin/true"}, format="json")
    assert (command.status_code, command.json()["code"]) == (409, "not_for_transport")
    assert McpServer.objects.get(pk=server_id).transport == "http"


# Outbound URL checks


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/mcp",
        "http://localhost:8000/mcp",
        "http://2130706433/mcp",
        "http://[::1]/mcp",
        "http://10.1.2.3/mcp",
        "http://192.168.0.10/mcp",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/mcp",
        "http://0x7f.0.0.1/mcp",
    ],
)
@pytest.mark.django_db
def test_non_public_urls_are_refused_unless_allowlisted(
    api: APIClient, settings: Any, url: str
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    response = register(api, name="internal", transport="http", url=url)
    assert response.status_code == 400, response.json()
    error = response.json()["errors"][0]
    assert error["path"] == "url"
    assert error["code"] == "address_not_allowed"
    assert "STUDIO_OUTBOUND_ALLOWLIST" in error["detail"]
    assert not McpServer.objects.exists()


@pytest.mark.django_db
def test_an_allowlisted_loopback_server_registers(api: APIClient, settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    response = register(api, name="local", transport="http", url="http://127.0.0.1:8000/mcp")
    assert response.status_code == 201, response.json()
    refused = register(api, name="other", transport="http", url="http://127.0.0.2:8000/mcp")
    assert refused.status_code == 400


@pytest.mark.django_db
def test_the_url_is_checked_again_before_each_connection(
    api: APIClient, ada: User, settings: Any, mcp_url: str
) -> None:
    server = http_server(ada, mcp_url)
    ok = api.post(f"{URL}{server.pk}/test/").json()
    assert ok["ok"] is True
    assert {"add", "echo", "environ"} <= {tool["name"] for tool in ok["tools"]}
    settings.STUDIO_OUTBOUND_ALLOWLIST = []  # say the operator narrowed it since
    refused = api.post(f"{URL}{server.pk}/test/").json()
    assert refused["ok"] is False
    assert "STUDIO_OUTBOUND_ALLOWLIST" in refused["detail"]


class _Recorder:
    """A plain HTTP server that counts requests and answers each with ``status`` and
    ``headers``: a redirecting MCP endpoint, or the target a redirect points at."""

    def __init__(self, host: str, status: int = 200, headers: dict[str, str] | None = None):
        self.hits = 0
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                recorder.hits += 1
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}/mcp"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "internal"])
@pytest.mark.django_db
def test_a_redirect_to_a_refused_address_is_not_followed(
    api: APIClient, ada: User, settings: Any, target: str
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    with _Recorder("127.0.0.2") as internal:
        location = internal.url if target == "internal" else target
        with _Recorder("127.0.0.1", 307, {"Location": location}) as bouncer:
            created = register(api, name="bouncer", transport="http", url=bouncer.url)
            assert created.status_code == 201
            check = api.post(f"{URL}{created.json()['id']}/test/").json()
    assert check["ok"] is False
    assert bouncer.hits >= 1
    assert internal.hits == 0


# Specs and runs


def mcp_agent(owner: User, script: list[dict[str, Any]], **ref: Any) -> Agent:
    ModelConfig.objects.create(
        owner=owner, name="scripted", provider="scripted", options={"script": script, "loop": False}
    )
    spec = {
        "name": "helper",
        "model": "scripted",
        "instruction": "Use the tools.",
        "mcp": [{"server": "tests", **ref}],
    }
    return services.create_agent(owner, name="helper", spec=spec)


def call(tool: str, /, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "id": f"call-{tool}", "args": args}]}


def tool_results(run: Run) -> list[dict[str, Any]]:
    events = Event.objects.filter(session_id=run.session_id, type="tool_response")
    return [part for event in events.order_by("seq") for part in event.payload["parts"]]


def run_agent(agent: Agent, text: str = "go") -> Run:
    session = services.start_session(agent.owner, agent)
    run = services.start_run(session, text)
    return async_to_sync(execute_run)(run)


@pytest.mark.django_db(transaction=True)
def test_an_agent_calls_a_tool_of_an_http_mcp_server(ada: User, mcp_url: str) -> None:
    http_server(ada, mcp_url)
    agent = mcp_agent(ada, [call("add", a=2, b=40), {"text": "done"}], tools=["add", "echo"])
    run = run_agent(agent)
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    [result] = tool_results(run)
    assert (result["name"], result["result"]) == ("add", "42")


@pytest.mark.django_db(transaction=True)
def test_a_prefix_names_the_servers_tools_for_the_model(ada: User, mcp_url: str) -> None:
    http_server(ada, mcp_url)
    agent = mcp_agent(ada, [call("docs_echo", text="hi"), {"text": "done"}], prefix="docs_")
    run = run_agent(agent)
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    assert [(r["name"], r["result"]) for r in tool_results(run)] == [("docs_echo", "hi")]


@pytest.mark.django_db(transaction=True)
def test_a_stored_header_echoed_by_the_server_never_reaches_events_or_logs(
    ada: User, mcp_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    http_server(ada, mcp_url, **{"X-Api-Key": CANARY})
    agent = mcp_agent(ada, [call("header", name="X-Api-Key"), {"text": "done"}])
    run = run_agent(agent)
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    [result] = tool_results(run)
    assert result["result"] == "[redacted]"
    stored = json.dumps(list(Event.objects.values_list("payload", flat=True)))
    assert CANARY not in stored
    assert caplog.records  # DEBUG logging was on
    assert CANARY not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_a_run_fails_cleanly_when_its_server_is_refused_at_connection_time(
    ada: User, settings: Any, mcp_url: str
) -> None:
    http_server(ada, mcp_url)
    agent = mcp_agent(ada, [{"text": "never"}])
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    run = run_agent(agent)
    assert (run.status, run.error_code) == (RunStatus.FAILED, "mcp_refused")
    assert "STUDIO_OUTBOUND_ALLOWLIST" in run.error_message


@pytest.mark.django_db(transaction=True)
def test_a_run_fails_cleanly_when_its_server_does_not_answer(ada: User) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    http_server(ada, dead)
    run = run_agent(mcp_agent(ada, [{"text": "never"}]))
    assert (run.status, run.error_code) == (RunStatus.FAILED, "mcp_unavailable")


@pytest.mark.django_db
def test_specs_may_name_only_their_owners_servers(api: APIClient, bob: User, mcp_url: str) -> None:
    http_server(bob, mcp_url, name="bobs")
    ModelConfig.objects.create(
        owner=User.objects.get(username="ada"), name="m", provider="scripted"
    )
    spec = {"name": "helper", "model": "m", "mcp": [{"server": "bobs"}]}
    response = api.post("/api/agents/", {"name": "helper", "spec": spec}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "spec.mcp.0.server"


@pytest.mark.django_db
def test_a_server_agents_use_cannot_be_deleted_or_renamed(
    api: APIClient, ada: User, mcp_url: str
) -> None:
    server = http_server(ada, mcp_url)
    mcp_agent(ada, [{"text": "hi"}])
    deleted = api.delete(f"{URL}{server.pk}/")
    assert (deleted.status_code, deleted.json()["code"]) == (409, "mcp_server_in_use")
    renamed = api.patch(f"{URL}{server.pk}/", {"name": "renamed"}, format="json")
    assert renamed.status_code == 400
    assert renamed.json()["errors"][0]["code"] == "in_use"
    Agent.objects.filter(owner=ada).delete()
    assert api.delete(f"{URL}{server.pk}/").status_code == 204


@pytest.mark.django_db(transaction=True)
def test_the_tools_of_a_server_that_an_agent_reference_names_are_connected(
    ada: User, mcp_url: str
) -> None:
    http_server(ada, mcp_url)
    mcp_agent(ada, [call("echo", text="via ref"), {"text": "done"}])
    root = services.create_agent(
        ada,
        name="root",
        spec={"name": "root", "type": "sequential", "sub_agents": [{"ref": "helper"}]},
    )
    run = run_agent(root)
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    assert [r["result"] for r in tool_results(run)] == ["via ref"]


@pytest.mark.django_db
def test_rotating_the_encryption_key_keeps_mcp_secrets_readable(
    ada: User, settings: Any, mcp_url: str
) -> None:
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old]
    server = http_server(ada, mcp_url, Authorization=CANARY)
    settings.FIELD_ENCRYPTION_KEYS = [new, old]
    out = io.StringIO()
    call_command("reencrypt_api_keys", stdout=out)
    assert "the secrets of 1 MCP server(s)" in out.getvalue()
    settings.FIELD_ENCRYPTION_KEYS = [new]
    server.refresh_from_db()
    assert server.headers() == {"Authorization": CANARY}


@pytest.mark.django_db
def test_a_name_taken_between_the_check_and_the_save_is_a_400(
    api: APIClient, ada: User, mcp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if a concurrent request registered the name after this one checked it.
    monkeypatch.setattr(McpServerSerializer, "validate_name", lambda self, name: name)
    http_server(ada, mcp_url, name="docs")
    response = register(api, name="docs", transport="http", url=mcp_url)
    assert response.status_code == 400
    assert response.json()["errors"][0]["code"] == "unique"
    assert McpServer.objects.filter(owner=ada, name="docs").count() == 1


@pytest.mark.django_db
def test_a_name_that_resolves_elsewhere_at_connection_time_is_not_connected(
    api: APIClient, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding: "localhost" answers a public address to the checks made when the
    URL is saved and used, then its real loopback address. The connection goes only to
    an address that was itself checked, so it never reaches the loopback server."""
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    real_resolver = security.system_resolver
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["93.184.216.34"] if len(lookups) <= 2 else real_resolver(host, port)

    monkeypatch.setattr(security, "system_resolver", rebinding)
    with _Recorder("127.0.0.1") as local:
        port = local.httpd.server_address[1]
        created = register(api, name="rebind", transport="http", url=f"http://localhost:{port}/")
        assert created.status_code == 201, created.json()
        check = api.post(f"{URL}{created.json()['id']}/test/").json()
    assert len(lookups) == 3  # saved, used, connected
    assert check["ok"] is False
    assert "loopback" in check["detail"]
    assert local.hits == 0


@pytest.mark.django_db
def test_each_admitted_address_of_a_name_is_tried_in_turn(
    api: APIClient, settings: Any, monkeypatch: pytest.MonkeyPatch, mcp_url: str
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.0/8"]
    port = mcp_url.split(":")[2].split("/")[0]
    # 127.0.0.3 refuses the connection; 127.0.0.1 is the MCP server (which accepts
    # only a loopback name in the Host header).
    monkeypatch.setattr(security, "system_resolver", lambda host, port: ["127.0.0.3", "127.0.0.1"])
    created = register(api, name="multi", transport="http", url=f"http://localhost:{port}/mcp")
    assert created.status_code == 201, created.json()
    check = api.post(f"{URL}{created.json()['id']}/test/").json()
    assert check["ok"] is True, check["detail"]
