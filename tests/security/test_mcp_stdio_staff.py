"""stdio MCP servers run a program on Studio's host: only staff register or change them,
the exact command is stored and shown, and the process sees only allowlisted
environment variables (asserted by a real stdio MCP server reporting its environment)."""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from studio import services
from studio.mcp import checks as mcp_checks
from studio.models import Event, McpServer, ModelConfig, RunStatus
from studio.runs.execute import execute_run
from tests.studio.conftest import client_for

SERVER_SCRIPT = str(Path(__file__).parents[1] / "support" / "mcp_server.py")
URL = "/api/mcp-servers/"
ALLOWLIST = ["PATH", "HOME", "LANG", "TZ"]
# Studio's own secrets, and variables the MCP SDK would pass on by default.
NEVER_PASSED = {
    "STUDIO_SECRET_KEY": "studio-secret-key-CANARY-0123456789",
    "STUDIO_FIELD_ENCRYPTION_KEYS": "fernet-key-CANARY-abcdefghijklmnop",
    "DATABASE_URL": "postgres://studio:db-password-CANARY@db/studio",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-CANARY-qrstuvwxyz",
    "USER": "studio-user",
    "LOGNAME": "studio-user",
    "SHELL": "/bin/bash",
    "TERM": "xterm",
}


def stdio_body(**extra: Any) -> dict[str, Any]:
    return {
        "name": "local",
        "transport": "stdio",
        "command": sys.executable,
        "args": [SERVER_SCRIPT],
        **extra,
    }


def stdio_server(owner: User, **env: str) -> McpServer:
    server = McpServer(
        owner=owner, name="local", transport="stdio", command=sys.executable, args=[SERVER_SCRIPT]
    )
    server.set_env(env)
    server.save()
    return server


# Who may register and change them


@pytest.mark.parametrize("body", [stdio_body(), stdio_body(command="", env={"X Y": "z"})])
@pytest.mark.django_db
def test_a_non_staff_user_cannot_register_a_stdio_server(
    api: APIClient, body: dict[str, Any]
) -> None:
    response = api.post(URL, body, format="json")
    assert response.status_code == 403
    assert response.json() == {"code": "staff_only", "detail": mcp_checks.STDIO_STAFF_ONLY}
    assert not McpServer.objects.exists()


@pytest.mark.django_db
def test_staff_register_a_stdio_server_and_its_exact_command_is_shown(staff: User) -> None:
    args = [SERVER_SCRIPT, "--label", "two words", "$HOME;rm -rf /", "'quoted'"]
    response = client_for(staff).post(URL, stdio_body(args=args), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    expected = shlex.join([sys.executable, *args])
    assert (body["command"], body["args"], body["command_line"]) == (sys.executable, args, expected)
    stored = McpServer.objects.get(pk=body["id"])
    assert (stored.command, stored.args, stored.created_by) == (sys.executable, args, staff)
    assert client_for(staff).get(f"{URL}{stored.pk}/").json()["command_line"] == expected


@pytest.mark.django_db
def test_a_non_staff_owner_sees_but_cannot_change_a_stdio_server_staff_gave_them(
    api: APIClient, ada: User
) -> None:
    server = stdio_server(ada)
    shown = api.get(f"{URL}{server.pk}/").json()
    assert shown["command_line"] == shlex.join([sys.executable, SERVER_SCRIPT])
    for change in ({"command": "/bin/sh"}, {"args": ["-c", "id"]}, {"description": "mine"}):
        response = api.patch(f"{URL}{server.pk}/", change, format="json")
        assert (response.status_code, response.json()["code"]) == (403, "staff_only")
    server.refresh_from_db()
    assert (server.command, server.args, server.description) == (
        sys.executable,
        [SERVER_SCRIPT],
        "",
    )
    assert api.delete(f"{URL}{server.pk}/").status_code == 204


@pytest.mark.django_db
def test_a_non_staff_user_cannot_turn_an_http_server_into_a_stdio_one(
    api: APIClient, settings: Any
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    created = api.post(
        URL, {"name": "web", "transport": "http", "url": "http://127.0.0.1:9/mcp"}, format="json"
    )
    response = api.patch(
        f"{URL}{created.json()['id']}/",
        {"transport": "stdio", "command": "/bin/sh"},
        format="json",
    )
    assert (response.status_code, response.json()["code"]) == (409, "transport_immutable")
    assert not McpServer.objects.filter(transport="stdio").exists()


@pytest.mark.parametrize(
    ("env", "code"),
    [
        ({"STUDIO_SECRET_KEY": "x"}, "not_allowed"),
        ({"LD_PRELOAD": "/tmp/evil.so"}, "not_allowed"),
        ({"PYTHONSTARTUP": "/tmp/evil.py"}, "not_allowed"),
        ({"1BAD": "x"}, "invalid_name"),
        ({"LANG": "C\nX=1"}, "invalid"),
    ],
)
@pytest.mark.django_db
def test_environment_names_outside_the_allowlist_are_refused(
    staff: User, settings: Any, env: dict[str, str], code: str
) -> None:
    settings.STUDIO_MCP_ENV_ALLOWLIST = ALLOWLIST
    response = client_for(staff).post(URL, stdio_body(env=env), format="json")
    assert response.status_code == 400
    [error] = response.json()["errors"]
    assert (error["path"].split(".")[0], error["code"]) == ("env", code)
    assert not McpServer.objects.exists()


@pytest.mark.django_db
def test_environment_values_are_write_only(staff: User, settings: Any) -> None:
    settings.STUDIO_MCP_ENV_ALLOWLIST = [*ALLOWLIST, "GITHUB_TOKEN"]
    token = "ghp_env-value-CANARY-0123456789"
    client = client_for(staff)
    created = client.post(URL, stdio_body(env={"GITHUB_TOKEN": token}), format="json")
    assert created.status_code == 201
    assert created.json()["env_names"] == ["GITHUB_TOKEN"]
    for response in (created, client.get(URL), client.get(f"{URL}{created.json()['id']}/")):
        assert token not in response.content.decode()
    assert token not in McpServer.objects.get().env_ciphertext


# The process's environment


def environment_seen_by_a_run(owner: User) -> dict[str, str]:
    """Runs an agent that calls the stdio server's ``environ`` tool; its answer."""
    ModelConfig.objects.create(
        owner=owner,
        name="scripted",
        provider="scripted",
        options={
            "script": [
                {"tool_calls": [{"name": "environ", "id": "c1", "args": {}}]},
                {"text": "done"},
            ],
            "loop": False,
        },
    )
    spec = {"name": "helper", "model": "scripted", "mcp": [{"server": "local"}]}
    agent = services.create_agent(owner, name="helper", spec=spec)
    run = services.start_run(services.start_session(owner, agent), "what do you see?")
    finished = async_to_sync(execute_run)(run)
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    [response] = Event.objects.filter(session_id=run.session_id, type="tool_response")
    [part] = response.payload["parts"]
    assert not part["is_error"], part["result"]
    return dict(line.split("=", 1) for line in part["result"].splitlines())


@pytest.mark.django_db(transaction=True)
def test_a_stdio_servers_process_sees_only_allowlisted_variables(
    ada: User, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.STUDIO_MCP_ENV_ALLOWLIST = ALLOWLIST
    for name, value in NEVER_PASSED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", "/home/studio-test")
    monkeypatch.delenv("TZ", raising=False)
    stdio_server(ada, LANG="C.UTF-8")
    seen = environment_seen_by_a_run(ada)
    assert set(seen) <= set(ALLOWLIST)
    assert seen["HOME"] == "/home/studio-test"  # Studio's own value of an allowed name
    assert seen["LANG"] == "C.UTF-8"  # the value staff stored
    assert seen["PATH"] == os.environ["PATH"]
    assert "TZ" not in seen  # allowed, but neither Studio nor staff set it
    assert not {value for value in NEVER_PASSED.values()} & set(seen.values())


@pytest.mark.django_db(transaction=True)
def test_a_stored_variable_the_allowlist_no_longer_names_is_not_passed(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_MCP_ENV_ALLOWLIST = [*ALLOWLIST, "GITHUB_TOKEN"]
    stdio_server(ada, LANG="C.UTF-8", GITHUB_TOKEN="ghp_stored-before-CANARY-12345")
    settings.STUDIO_MCP_ENV_ALLOWLIST = ALLOWLIST  # the operator narrowed it since
    seen = environment_seen_by_a_run(ada)
    assert "GITHUB_TOKEN" not in seen
    assert set(seen) <= set(ALLOWLIST)


# The admin


@pytest.fixture
def admin_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def admin_form(owner: User, **fields: str) -> dict[str, str]:
    return {
        "owner": str(owner.pk),
        "name": "local",
        "description": "",
        "transport": "stdio",
        "url": "",
        "command": sys.executable,
        "args": f'["{SERVER_SCRIPT}"]',
        "new_headers": "",
        "new_env": "",
        **fields,
    }


@pytest.mark.django_db
def test_non_staff_users_cannot_reach_the_mcp_admin(ada: User) -> None:
    client = Client()
    client.force_login(ada)
    response = client.post("/admin/studio/mcpserver/add/", admin_form(ada))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
    assert not McpServer.objects.exists()


@pytest.mark.django_db
def test_staff_give_a_user_a_stdio_server_in_the_admin(
    admin_client: Client, staff: User, ada: User, settings: Any
) -> None:
    settings.STUDIO_MCP_ENV_ALLOWLIST = ALLOWLIST
    refused = admin_client.post(
        "/admin/studio/mcpserver/add/", admin_form(ada, new_env='{"STUDIO_SECRET_KEY": "x"}')
    )
    assert refused.status_code == 200  # the form again, with the error
    assert "STUDIO_MCP_ENV_ALLOWLIST" in refused.content.decode()
    assert not McpServer.objects.exists()
    value = "C.UTF-8-value-CANARY"
    created = admin_client.post(
        "/admin/studio/mcpserver/add/", admin_form(ada, new_env=f'{{"LANG": "{value}"}}')
    )
    errors = re.findall(r"errorlist[^>]*>(.*?)</ul>", created.content.decode(), re.S)
    assert created.status_code == 302, errors
    server = McpServer.objects.get()
    assert (server.owner, server.created_by, server.env()) == (ada, staff, {"LANG": value})
    page = admin_client.get(f"/admin/studio/mcpserver/{server.pk}/change/").content.decode()
    assert shlex.join([sys.executable, SERVER_SCRIPT]) in page
    assert value not in page
    listing = admin_client.get("/admin/studio/mcpserver/").content.decode()
    assert shlex.join([sys.executable, SERVER_SCRIPT]) in listing
