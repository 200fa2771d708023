"""The MCP servers page: the owner's servers only, the API's validation on its form,
stdio servers for staff only, header values never rendered, deletion refused while
agents use a server, and a real connection test against tests/support/mcp_server.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from studio import services
from studio.models import McpServer, ModelConfig
from tests.studio.conftest import signed_in
from tests.support.mcp_server import serve_http

pytestmark = pytest.mark.django_db

CANARY = "page-header-CANARY-4e1b7c"
LIST = "/mcp-servers/"
NEW = "/mcp-servers/new/"


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


def http_server(
    owner: User, name: str = "docs", url: str = "http://127.0.0.1:9/mcp", **headers: str
) -> McpServer:
    server = McpServer(owner=owner, name=name, transport="http", url=url)
    server.set_headers(headers)
    server.save()
    return server


def stdio_server(owner: User, name: str = "local") -> McpServer:
    server = McpServer(
        owner=owner,
        name=name,
        transport="stdio",
        command="python",
        args=["-m", "tests.support.mcp_server", "two words", "<b>x</b>"],
    )
    server.set_env({})
    server.save()
    return server


def using_agent(owner: User, server: str) -> None:
    ModelConfig.objects.create(owner=owner, name="scripted", provider="scripted", options={})
    spec = {"name": "helper", "model": "scripted", "instruction": "hi", "mcp": [{"server": server}]}
    services.create_agent(owner, name="helper", spec=spec)


def register(client: Client, **fields: str) -> Any:
    return client.post(NEW, {"name": "docs", "url": "http://127.0.0.1:9/mcp", **fields})


# Signing in and scoping


def test_every_page_needs_a_signed_in_user(ada: User) -> None:
    server = http_server(ada)
    client = Client()
    for path in (LIST, NEW, f"{LIST}{server.pk}/"):
        response = client.get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    for path in (f"{LIST}{server.pk}/test/", f"{LIST}{server.pk}/delete/"):
        assert client.post(path).status_code == 302
    assert McpServer.objects.filter(pk=server.pk).exists()


def test_the_list_shows_only_the_owners_servers(ada: User, bob: User) -> None:
    http_server(ada, "adas_docs")
    http_server(bob, "bobs_docs", url="http://127.0.0.1:9/bob-only")
    html = signed_in(ada).get(LIST).content.decode()
    assert "adas_docs" in html
    assert "bobs_docs" not in html and "bob-only" not in html
    assert 'aria-current="page">MCP servers</a>' in html


def test_another_users_server_answers_404_everywhere(ada: User, bob: User) -> None:
    server = http_server(bob)
    client = signed_in(ada)
    assert client.get(f"{LIST}{server.pk}/").status_code == 404
    assert (
        client.post(f"{LIST}{server.pk}/", {"name": "taken", "url": server.url}).status_code == 404
    )
    assert client.post(f"{LIST}{server.pk}/test/").status_code == 404
    assert client.post(f"{LIST}{server.pk}/delete/").status_code == 404
    server.refresh_from_db()
    assert server.name == "docs"


def test_the_empty_state_explains_how_a_spec_names_a_server(ada: User) -> None:
    html = signed_in(ada).get(LIST).content.decode()
    assert "No MCP servers yet" in html
    assert '"mcp": [{"server": "docs"' in html


# Registering and editing an http server


def test_registering_stores_the_header_encrypted_and_never_renders_it(ada: User) -> None:
    client = signed_in(ada)
    response = register(client, description="Docs search", headers=f"Authorization: {CANARY}")
    assert response.status_code == 302
    server = McpServer.objects.get(owner=ada, name="docs")
    assert (server.transport, server.headers()) == ("http", {"Authorization": CANARY})
    assert CANARY not in server.headers_ciphertext
    for path in (LIST, f"{LIST}{server.pk}/"):
        html = client.get(path).content.decode()
        assert CANARY not in html
        assert "Authorization" in html


def test_a_refused_form_shows_the_errors_without_echoing_the_header(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    response = register(signed_in(ada), name="9bad", headers=f"X-Token: {CANARY}")
    html = response.content.decode()
    assert response.status_code == 400
    assert "letters, digits" in html  # the name rule
    assert "STUDIO_OUTBOUND_ALLOWLIST" in html  # the outbound check on the URL
    assert CANARY not in html
    assert not McpServer.objects.exists()


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ("Host: evil", "the MCP client sets"),
        ("Bad Name: x", "not a valid header name"),
        ("no colon here", "write &#x27;Name: value&#x27;"),
        ("X-A: 1\nx-a: 2", "given twice"),
    ],
)
def test_header_lines_are_checked_like_the_api(ada: User, headers: str, message: str) -> None:
    response = register(signed_in(ada), headers=headers)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not McpServer.objects.exists()


def test_names_are_unique_per_owner(ada: User, bob: User) -> None:
    http_server(bob)
    assert register(signed_in(ada)).status_code == 302
    response = register(signed_in(ada))
    assert response.status_code == 400
    assert "you already have an MCP server named &#x27;docs&#x27;" in response.content.decode()


def test_an_empty_header_field_keeps_the_stored_headers_and_remove_clears_them(ada: User) -> None:
    server = http_server(ada, Authorization=CANARY)
    client = signed_in(ada)
    path = f"{LIST}{server.pk}/"
    assert client.post(path, {"name": "docs2", "url": server.url, "headers": ""}).status_code == 302
    server.refresh_from_db()
    assert (server.name, server.headers()) == ("docs2", {"Authorization": CANARY})
    client.post(path, {"name": "docs2", "url": server.url, "remove_headers": "on"})
    server.refresh_from_db()
    assert server.headers() == {}


def test_a_server_agents_use_cannot_be_renamed_or_deleted(ada: User) -> None:
    server = http_server(ada)
    using_agent(ada, "docs")
    client = signed_in(ada)
    renamed = client.post(f"{LIST}{server.pk}/", {"name": "other", "url": server.url})
    assert renamed.status_code == 400
    assert "agents name this server by its current name: helper" in renamed.content.decode()
    deleted = client.post(f"{LIST}{server.pk}/delete/", follow=True)
    assert (
        "MCP server docs is used by: helper. Change those agents first." in deleted.content.decode()
    )
    assert McpServer.objects.filter(pk=server.pk).exists()
    assert "helper" in client.get(LIST).content.decode()  # the list says who uses it


def test_an_unused_server_is_deleted(ada: User) -> None:
    server = http_server(ada)
    response = signed_in(ada).post(f"{LIST}{server.pk}/delete/", follow=True)
    assert "Deleted MCP server docs." in response.content.decode()
    assert not McpServer.objects.exists()


# stdio servers


def test_non_staff_see_their_stdio_server_read_only_with_the_exact_command(ada: User) -> None:
    server = stdio_server(ada)
    client = signed_in(ada)
    html = client.get(LIST).content.decode()
    assert (
        "python -m tests.support.mcp_server &#x27;two words&#x27; &#x27;&lt;b&gt;x&lt;/b&gt;&#x27;"
        in html
    )
    assert f'href="{reverse("mcp-server-edit", args=[server.pk])}"' not in html
    assert reverse("mcp-server-new-stdio") not in html
    assert client.get(f"{LIST}{server.pk}/").status_code == 403
    assert (
        client.post(f"{LIST}{server.pk}/", {"name": "x", "url": "http://127.0.0.1:9/"}).status_code
        == 403
    )
    assert client.get(reverse("mcp-server-new-stdio")).status_code == 403
    server.refresh_from_db()
    assert (server.transport, server.name) == ("stdio", "local")


def test_staff_are_sent_to_the_admin_for_stdio_servers(staff: User) -> None:
    server = stdio_server(staff)
    client = signed_in(staff)
    assert reverse("mcp-server-new-stdio") in client.get(LIST).content.decode()
    assert client.get(reverse("mcp-server-new-stdio"))["Location"] == reverse(
        "admin:studio_mcpserver_add"
    )
    assert client.get(f"{LIST}{server.pk}/")["Location"] == reverse(
        "admin:studio_mcpserver_change", args=[server.pk]
    )


def test_the_form_registers_http_servers_only(ada: User) -> None:
    register(signed_in(ada), transport="stdio", command="sh")
    assert McpServer.objects.get().transport == "http"


# Testing a connection


def test_a_connection_test_lists_the_tools_as_text(ada: User, mcp_url: str) -> None:
    server = http_server(ada, url=mcp_url, Authorization=CANARY)
    html = signed_in(ada).post(f"{LIST}{server.pk}/test/").content.decode()
    assert "Connected" in html
    tools = re.findall(r'<td class="mono">([^<]+)</td>', html)
    assert {"add", "echo", "header"} <= set(tools)
    assert CANARY not in html


def test_a_failed_connection_test_says_why(ada: User, settings: Any) -> None:
    server = http_server(ada)
    settings.STUDIO_OUTBOUND_ALLOWLIST = []  # narrowed since it was saved
    html = signed_in(ada).post(f"{LIST}{server.pk}/test/").content.decode()
    assert "Failed" in html and "STUDIO_OUTBOUND_ALLOWLIST" in html
